import { ContractFactory, Interface } from 'ethers'
import { artifact } from '../chain/artifacts.ts'
import type { DevContracts } from './deploy.ts'

/**
 * PushedValue's write, its event and its reads: what a push job sends, how a reader finds every
 * tick, and what a consumer reads (AggregatorV3Interface's latestRoundData).
 */
export const PUSHED_VALUE = new Interface([
  'function push(int256 answer, uint256 tick)',
  'event ValuePushed(uint80 indexed roundId, uint256 indexed tick, int256 answer, uint256 updatedAt)',
  'function latestRoundData() view returns (uint80 roundId, int256 answer, uint256 startedAt, uint256 updatedAt, uint80 answeredInRound)',
  'function latestRound() view returns (uint80)',
  'function getRoundData(uint80 roundId) view returns (uint80 roundId, int256 answer, uint256 startedAt, uint256 updatedAt, uint80 answeredInRound)',
  'function tickOf(uint80 roundId) view returns (uint256)',
  'function writers(address) view returns (bool)',
])

/** The project's PushedValue (contracts/PushedValue.sol), `writers` the keys that may write to it. */
export async function deployPushedValue(
  contracts: Pick<DevContracts, 'artifacts' | 'deployer'>,
  writers: readonly string[],
  description = 'pushed value',
): Promise<string> {
  const compiled = artifact(contracts.artifacts, 'PushedValue')
  const factory = new ContractFactory(compiled.abi as never, compiled.bytecode, contracts.deployer)
  const deployed = await (await factory.deploy(2, description, [...writers])).waitForDeployment()
  return (await deployed.getAddress()).toLowerCase()
}

/**
 * A cron job (Chainlink's TOML) that writes 4200 and the tick it runs (`$(jobRun.meta.cron.tick)`,
 * epoch ms) to `pushed` on `schedule`: each tick that reaches the chain says which it was.
 */
export function tickWriterSpec(options: {
  name: string
  externalJobId: string
  schedule: string
  pushed: string
}): string {
  return `type = "cron"
schemaVersion = 1
name = "${options.name}"
externalJobID = "${options.externalJobId}"
schedule = "${options.schedule}"
observationSource = """
  encode [type="ethabiencode" abi="push(int256 answer, uint256 tick)" data="{\\\\"answer\\\\": 4200, \\\\"tick\\\\": $(jobRun.meta.cron.tick)}"]
  submit [type="ethtx" to="${options.pushed}" data="$(encode)"]
  encode -> submit
"""
`
}
