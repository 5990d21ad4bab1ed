import type { Log } from 'ethers'
import { FLUX_TOPICS, fluxAggregatorInterface } from '../src/chain/flux/aggregator.ts'
import { logsOf, type KeyCall } from './chain-read.ts'
import type { FluxFacts, FluxTxFact } from './history.ts'

// The schedule's flux feed as the chain holds it: the aggregator's SubmissionReceived and NewRound
// logs, read from anvil itself, and the node keys' transactions to it (read from the blocks in
// chain-read.ts, with their receipts' status and the head the proxy saw each sent at).

export async function readFluxFacts(
  anvilUrl: string,
  flux: { aggregator: string; idleMs: number; expected: bigint },
  calls: ReadonlyArray<KeyCall & { reverted: boolean; sentAt?: number; sentAtHead?: number }>,
  timeOf: (block: number) => number,
): Promise<FluxFacts> {
  const [submitted, started] = await Promise.all([
    logsOf(anvilUrl, flux.aggregator, FLUX_TOPICS.submissionReceived),
    logsOf(anvilUrl, flux.aggregator, FLUX_TOPICS.newRound),
  ])
  const parse = (log: (typeof submitted)[number]) =>
    fluxAggregatorInterface.parseLog(log as unknown as Log)!.args
  return {
    ...flux,
    submissions: submitted.map((log) => {
      const args = parse(log)
      return {
        round: Number(args.round as bigint),
        oracle: String(args.oracle).toLowerCase(),
        value: args.submission as bigint,
        block: Number(log.blockNumber),
        txHash: log.transactionHash.toLowerCase(),
      }
    }),
    rounds: started.map((log) => {
      const args = parse(log)
      const block = Number(log.blockNumber)
      return {
        round: Number(args.roundId as bigint),
        startedBy: String(args.startedBy).toLowerCase(),
        block,
        at: timeOf(block),
      }
    }),
    txs: calls.map(({ input, ...tx }): FluxTxFact => {
      const round = submittedRound(input)
      return { ...tx, ...(round === undefined ? {} : { round }) }
    }),
  }
}

/** The round a submit's calldata names, or undefined for another call. */
function submittedRound(data: string): number | undefined {
  try {
    const call = fluxAggregatorInterface.parseTransaction({ data })
    return call?.name === 'submit' ? Number(call.args[0] as bigint) : undefined
  } catch {
    return undefined
  }
}
