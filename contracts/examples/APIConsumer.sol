// SPDX-License-Identifier: MIT
pragma solidity 0.8.19;

import {Chainlink} from "@chainlink/contracts/src/v0.8/operatorforwarder/Chainlink.sol";
import {ChainlinkClient} from "@chainlink/contracts/src/v0.8/operatorforwarder/ChainlinkClient.sol";

/**
 * @title APIConsumer
 * @notice A plain ChainlinkClient consumer, as Chainlink's "single word response" guide writes one, for
 * the "Get > Uint256" job: it asks for the number at `path` in the JSON at `url`, times 10^18, and
 * stores it. docs/consumers.md walks through it; test/e2e/published-spec.test.ts runs it on the dev chain.
 */
contract APIConsumer is ChainlinkClient {
  using Chainlink for Chainlink.Request;

  uint256 public volume;
  bytes32 private immutable i_jobId;
  uint256 private immutable i_fee;

  event RequestVolume(bytes32 indexed requestId, uint256 volume);

  /**
   * @param jobId the job's externalJobID without its hyphens, as 32 ASCII characters: for
   * "ca98366c-c731-4957-b8c0-12c72f05aeea" pass the literal bytes32("ca98366cc7314957b8c012c72f05aeea").
   * @param fee LINK juels paid per request (this contract must hold them).
   */
  constructor(address link, address operator, bytes32 jobId, uint256 fee) {
    _setChainlinkToken(link);
    _setChainlinkOracle(operator);
    i_jobId = jobId;
    i_fee = fee;
  }

  /// Asks the job for the 24-hour volume at `url` (a CryptoCompare-shaped pricemultifull answer).
  function requestVolumeData(string calldata url) public returns (bytes32 requestId) {
    Chainlink.Request memory req = _buildChainlinkRequest(i_jobId, address(this), this.fulfill.selector);
    req._add("get", url);
    req._add("path", "RAW,ETH,USD,VOLUME24HOUR");
    req._addInt("times", int256(10 ** 18));
    return _sendChainlinkRequest(req, i_fee);
  }

  /// Called by the Operator with the job's answer.
  function fulfill(bytes32 requestId, uint256 newVolume) public recordChainlinkFulfillment(requestId) {
    emit RequestVolume(requestId, newVolume);
    volume = newVolume;
  }

  /**
   * After the request's cancelExpiration (5 minutes after it was made) an unanswered request can be
   * cancelled, and its LINK comes back to this contract.
   */
  function cancelRequest(bytes32 requestId, uint256 payment, uint256 expiration) public {
    _cancelChainlinkRequest(requestId, payment, this.fulfill.selector, expiration);
  }
}
