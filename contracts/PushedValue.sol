// SPDX-License-Identifier: MIT
pragma solidity 0.8.19;

/**
 * @title PushedValue
 * @notice The latest value a push job wrote (a cron job's tick, a webhook call) and when, read the way
 * Chainlink's AggregatorV3Interface is read (`latestRoundData`, `decimals`). Each write is one round
 * and says which tick it is, so a reader can tell every tick that reached the chain, once each.
 * @dev Only the writers named at deployment (the runner's sender keys) may write.
 */
contract PushedValue {
  struct Round {
    int256 answer;
    uint64 updatedAt;
    uint64 tick;
  }

  uint8 public immutable decimals;
  string public description;
  mapping(address => bool) public writers;
  uint80 public latestRound;
  mapping(uint80 => Round) private s_rounds;

  /// `tick` is the run's tick in epoch milliseconds (0 for a write no schedule made).
  event ValuePushed(uint80 indexed roundId, uint256 indexed tick, int256 answer, uint256 updatedAt);

  error NotWriter(address sender);
  error NoData();

  constructor(uint8 decimals_, string memory description_, address[] memory writers_) {
    decimals = decimals_;
    description = description_;
    for (uint256 i = 0; i < writers_.length; i++) writers[writers_[i]] = true;
  }

  /// Records `answer` as the next round, stamped with this block's time.
  function push(int256 answer, uint256 tick) external {
    if (!writers[msg.sender]) revert NotWriter(msg.sender);
    uint80 roundId = latestRound + 1;
    latestRound = roundId;
    s_rounds[roundId] = Round(answer, uint64(block.timestamp), uint64(tick));
    emit ValuePushed(roundId, tick, answer, block.timestamp);
  }

  function latestRoundData()
    external
    view
    returns (uint80 roundId, int256 answer, uint256 startedAt, uint256 updatedAt, uint80 answeredInRound)
  {
    return getRoundData(latestRound);
  }

  function getRoundData(uint80 roundId)
    public
    view
    returns (uint80, int256 answer, uint256 startedAt, uint256 updatedAt, uint80 answeredInRound)
  {
    Round memory round = s_rounds[roundId];
    if (round.updatedAt == 0) revert NoData();
    return (roundId, round.answer, round.updatedAt, round.updatedAt, roundId);
  }

  /// The tick a round wrote.
  function tickOf(uint80 roundId) external view returns (uint256) {
    return s_rounds[roundId].tick;
  }
}
