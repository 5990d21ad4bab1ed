// SPDX-License-Identifier: MIT
pragma solidity 0.8.19;

import {Chainlink} from "@chainlink/contracts/src/v0.8/operatorforwarder/Chainlink.sol";
import {ChainlinkClient} from "@chainlink/contracts/src/v0.8/operatorforwarder/ChainlinkClient.sol";

/**
 * @title FeedConsumer
 * @notice A direct-request consumer that can ask any job for one value of a chosen type. Every request
 * is recorded (who asked, which job, which type, in which block); every answer is stored by request id
 * and announced with an event, so tests, the demo and users can read what the oracle delivered.
 * @dev The Operator sees this contract as the requester; a second deployment is a second requester.
 */
contract FeedConsumer is ChainlinkClient {
  using Chainlink for Chainlink.Request;

  /// The type of the answer; it picks the callback the Operator calls. `Raw` is any other shape
  /// (several words, arrays, tuples): its callback stores the arguments as the Operator sent them.
  enum ValueType {
    Uint256,
    Int256,
    Bool,
    String,
    Bytes32,
    Bytes,
    Raw
  }

  /// The callback selector of Raw answers; no function has it, so the call reaches `fallback`.
  bytes4 public constant RAW_CALLBACK = bytes4(keccak256("fulfillRaw(bytes32,bytes)"));

  struct Request {
    address requester;
    bytes32 specId;
    ValueType valueType;
    uint64 blockNumber;
    uint256 payment;
    bool fulfilled;
    bool cancelled;
  }

  /// Every request made through this contract, by request id.
  mapping(bytes32 => Request) public requests;
  /// The answer of each fulfilled request, ABI-encoded as its ValueType.
  mapping(bytes32 => bytes) private s_values;
  /// Request ids in the order they were made.
  bytes32[] public requestIds;

  event DataRequested(
    bytes32 indexed requestId,
    bytes32 indexed specId,
    address indexed requester,
    ValueType valueType,
    uint256 payment
  );
  /// `value` is the answer ABI-encoded as `valueType` (abi.decode it with that type).
  event RequestFulfilled(bytes32 indexed requestId, ValueType valueType, bytes value);
  event RequestCancelled(bytes32 indexed requestId);

  constructor(address link, address operator) {
    _setChainlinkToken(link);
    _setChainlinkOracle(operator);
  }

  /**
   * @notice Asks job `specId` for a value of type `valueType`, paying `payment` LINK juels from this
   * contract's balance. Each `keys[i]`/`values[i]` pair becomes a string parameter of the request
   * (`path` and `times` are parameters like any other).
   */
  function requestData(
    bytes32 specId,
    uint256 payment,
    ValueType valueType,
    string[] calldata keys,
    string[] calldata values
  ) public returns (bytes32 requestId) {
    require(keys.length == values.length, "keys and values differ in length");
    Chainlink.Request memory req = _buildChainlinkRequest(specId, address(this), callbackSelector(valueType));
    for (uint256 i = 0; i < keys.length; i++) {
      req._add(keys[i], values[i]);
    }
    requestId = _sendOperatorRequest(req, payment);
    _record(requestId, specId, valueType, payment);
  }

  /**
   * @notice `requestData` sent as a version 1 request (the Operator's `oracleRequest`, as
   * `_sendChainlinkRequest` sends): a job that answers with `fulfillOracleRequest` (one bytes32 word,
   * Chainlink's "Get > Bytes32" spec) can only fulfil such a request.
   */
  function requestDataV1(
    bytes32 specId,
    uint256 payment,
    ValueType valueType,
    string[] calldata keys,
    string[] calldata values
  ) external returns (bytes32 requestId) {
    require(keys.length == values.length, "keys and values differ in length");
    Chainlink.Request memory req = _buildChainlinkRequest(specId, address(this), callbackSelector(valueType));
    for (uint256 i = 0; i < keys.length; i++) {
      req._add(keys[i], values[i]);
    }
    requestId = _sendChainlinkRequest(req, payment);
    _record(requestId, specId, valueType, payment);
  }

  /// @notice `requestData` plus the `path` and `times` parameters, each added only when not empty.
  function requestDataWithPath(
    bytes32 specId,
    uint256 payment,
    ValueType valueType,
    string[] calldata keys,
    string[] calldata values,
    string calldata path,
    string calldata times
  ) external returns (bytes32 requestId) {
    require(keys.length == values.length, "keys and values differ in length");
    Chainlink.Request memory req = _buildChainlinkRequest(specId, address(this), callbackSelector(valueType));
    for (uint256 i = 0; i < keys.length; i++) {
      req._add(keys[i], values[i]);
    }
    if (bytes(path).length > 0) req._add("path", path);
    if (bytes(times).length > 0) req._add("times", times);
    requestId = _sendOperatorRequest(req, payment);
    _record(requestId, specId, valueType, payment);
  }

  /**
   * @notice Cancels an unanswered request after its expiration (the `cancelExpiration` of the
   * Operator's OracleRequest log) and takes the payment back. Only the requester may cancel.
   */
  function cancelRequest(bytes32 requestId, uint256 expiration) external {
    Request storage request = requests[requestId];
    require(request.requester == msg.sender, "only the requester may cancel");
    require(!request.fulfilled && !request.cancelled, "request is not pending");
    request.cancelled = true;
    _cancelChainlinkRequest(requestId, request.payment, callbackSelector(request.valueType), expiration);
    emit RequestCancelled(requestId);
  }

  function fulfillUint256(bytes32 requestId, uint256 value) external recordChainlinkFulfillment(requestId) {
    _store(requestId, ValueType.Uint256, abi.encode(value));
  }

  function fulfillInt256(bytes32 requestId, int256 value) external recordChainlinkFulfillment(requestId) {
    _store(requestId, ValueType.Int256, abi.encode(value));
  }

  function fulfillBool(bytes32 requestId, bool value) external recordChainlinkFulfillment(requestId) {
    _store(requestId, ValueType.Bool, abi.encode(value));
  }

  function fulfillString(bytes32 requestId, string calldata value) external recordChainlinkFulfillment(requestId) {
    _store(requestId, ValueType.String, abi.encode(value));
  }

  function fulfillBytes32(bytes32 requestId, bytes32 value) external recordChainlinkFulfillment(requestId) {
    _store(requestId, ValueType.Bytes32, abi.encode(value));
  }

  function fulfillBytes(bytes32 requestId, bytes calldata value) external recordChainlinkFulfillment(requestId) {
    _store(requestId, ValueType.Bytes, abi.encode(value));
  }

  /**
   * @notice A Raw answer: the Operator calls RAW_CALLBACK with the job's encoded arguments, whose
   * first word is the request id. They are stored as they came (abi.decode them with the job's types,
   * the request id first).
   */
  fallback(bytes calldata input) external returns (bytes memory) {
    require(msg.sig == RAW_CALLBACK, "no such function");
    require(input.length >= 36, "a Raw answer starts with the request id");
    _fulfillRaw(bytes32(input[4:36]), input[4:]);
    return "";
  }

  function _fulfillRaw(bytes32 requestId, bytes calldata arguments) private recordChainlinkFulfillment(requestId) {
    _store(requestId, ValueType.Raw, arguments);
  }

  /// @notice The callback function selector used for answers of `valueType`.
  function callbackSelector(ValueType valueType) public pure returns (bytes4) {
    if (valueType == ValueType.Uint256) return this.fulfillUint256.selector;
    if (valueType == ValueType.Int256) return this.fulfillInt256.selector;
    if (valueType == ValueType.Bool) return this.fulfillBool.selector;
    if (valueType == ValueType.String) return this.fulfillString.selector;
    if (valueType == ValueType.Bytes32) return this.fulfillBytes32.selector;
    if (valueType == ValueType.Raw) return RAW_CALLBACK;
    return this.fulfillBytes.selector;
  }

  function isFulfilled(bytes32 requestId) external view returns (bool) {
    return requests[requestId].fulfilled;
  }

  function requestCount() external view returns (uint256) {
    return requestIds.length;
  }

  /// @notice The stored answer ABI-encoded as the request's type (empty until fulfilled).
  function rawValue(bytes32 requestId) external view returns (bytes memory) {
    return s_values[requestId];
  }

  function uint256Value(bytes32 requestId) external view returns (uint256) {
    return abi.decode(_valueOf(requestId, ValueType.Uint256), (uint256));
  }

  function int256Value(bytes32 requestId) external view returns (int256) {
    return abi.decode(_valueOf(requestId, ValueType.Int256), (int256));
  }

  function boolValue(bytes32 requestId) external view returns (bool) {
    return abi.decode(_valueOf(requestId, ValueType.Bool), (bool));
  }

  function stringValue(bytes32 requestId) external view returns (string memory) {
    return abi.decode(_valueOf(requestId, ValueType.String), (string));
  }

  function bytes32Value(bytes32 requestId) external view returns (bytes32) {
    return abi.decode(_valueOf(requestId, ValueType.Bytes32), (bytes32));
  }

  function bytesValue(bytes32 requestId) external view returns (bytes memory) {
    return abi.decode(_valueOf(requestId, ValueType.Bytes), (bytes));
  }

  /// @notice The LINK token and Operator this consumer uses.
  function chainlinkContracts() external view returns (address link, address operator) {
    return (_chainlinkTokenAddress(), _chainlinkOracleAddress());
  }

  function _record(bytes32 requestId, bytes32 specId, ValueType valueType, uint256 payment) private {
    requests[requestId] = Request({
      requester: msg.sender,
      specId: specId,
      valueType: valueType,
      blockNumber: uint64(block.number),
      payment: payment,
      fulfilled: false,
      cancelled: false
    });
    requestIds.push(requestId);
    emit DataRequested(requestId, specId, msg.sender, valueType, payment);
  }

  function _store(bytes32 requestId, ValueType valueType, bytes memory encoded) private {
    Request storage request = requests[requestId];
    // The callback is chosen by the request's type, so a mismatch means a misbehaving oracle.
    require(request.valueType == valueType, "answer type differs from the request's type");
    request.fulfilled = true;
    s_values[requestId] = encoded;
    emit RequestFulfilled(requestId, valueType, encoded);
  }

  function _valueOf(bytes32 requestId, ValueType valueType) private view returns (bytes memory) {
    Request storage request = requests[requestId];
    require(request.fulfilled, "request is not fulfilled");
    require(request.valueType == valueType, "request has another value type");
    return s_values[requestId];
  }
}
