import { addOracles, deployAggregator } from '../src/chain/flux/aggregator-admin.ts'
import type { DevContracts } from '../src/dev/deploy.ts'
import { gameOddsParams } from './catalog.ts'
import type { FluxPlan } from './schedule.ts'

// A schedule's flux feed: Chainlink's FluxAggregator with the node keys as its oracles, and the
// fluxmonitor job that feeds it the odds of one game through the adapter (the bridge `datafeed`).

/** The externalJobID of the schedule's flux job. */
export const FLUX_JOB_ID = '4a9d2c61-7e3b-4f08-b5c2-1d6e8f0a3b77'

/** Juels paid per submission: the aggregator is funded for far more rounds than a schedule makes. */
const PAYMENT = 10n ** 14n
const FUND = 10n ** 21n
/** Seconds after which an unfinished round may be superseded. */
const ROUND_TIMEOUT_S = 60

/**
 * Deploys the aggregator (its own LinkToken, minted and funded by the deployer, while the chain
 * still mines a block per transaction) and makes every node key an oracle: one submission answers a
 * round, so a node whose keys are owned by one process answers each round alone.
 */
export async function deployFluxFeed(
  contracts: Pick<DevContracts, 'deployer'>,
  oracles: readonly string[],
): Promise<string> {
  const { aggregator } = await deployAggregator(contracts.deployer, {
    paymentAmount: PAYMENT,
    timeout: ROUND_TIMEOUT_S,
    decimals: 2,
    description: 'chaos flux: game odds times 100',
    fund: FUND,
  })
  await addOracles(contracts.deployer, aggregator, oracles, { minSubmissions: 1 })
  return aggregator.toLowerCase()
}

/** The fluxmonitor spec (Chainlink's TOML): the plan's odds, the heartbeat and poll it drew. */
export function fluxSpec(aggregator: string, chainId: number, plan: FluxPlan): string {
  const data = Object.fromEntries([
    ['endpoint', 'game-odds'],
    ['key', '##signKey'],
    ...gameOddsParams(plan),
  ])
  // The request's JSON inside a TOML basic string inside a DOT attribute: quotes escaped twice.
  const body = JSON.stringify({ id: FLUX_JOB_ID, data }).replaceAll('"', '\\\\"')
  return `type = "fluxmonitor"
schemaVersion = 1
name = "chaos flux"
externalJobID = "${FLUX_JOB_ID}"
contractAddress = "${aggregator}"
evmChainID = "${chainId}"
threshold = 0.5
absoluteThreshold = 0
idleTimerPeriod = "${plan.idleMs / 1_000}s"
pollTimerPeriod = "${plan.pollMs / 1_000}s"
observationSource = """
    fetch [type="bridge" name="datafeed" timeout="${plan.pollMs / 1_000}s" requestData="${body}"]
    parse [type="jsonparse" path="result" data="$(fetch)"]
    fetch -> parse
"""
`
}
