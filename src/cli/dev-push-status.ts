import type { DevState } from '../dev/state.ts'
import { renderTable } from './table.ts'

// What `status` adds for the dev stack's push jobs that write to a PushedValue (the flux feed is in
// the flux table already): each one's latest round, read from the chain with one eth_call, so status
// loads no chain library for it.

/** The latest round of a PushedValue, or why there is none. */
export interface PushedValueRound {
  job: string
  address: string
  roundId?: string
  answer?: string
  /** Seconds (chain time). */
  updatedAt?: number
  /** Why no round was read: none written yet, or the chain did not answer. */
  none?: string
}

/** `latestRoundData()`'s selector (AggregatorV3Interface, as PushedValue answers it). */
const LATEST_ROUND_DATA = '0xfeaf968c'

/** Each PushedValue's latest round, read from the dev stack's chain. */
export async function readPushedValues(devStack: DevState): Promise<PushedValueRound[]> {
  return Promise.all(
    (devStack.pushedValues ?? []).map(async ({ job, address }) => {
      try {
        const words = wordsOf(await ethCall(devStack.rpcUrl, address, LATEST_ROUND_DATA))
        if (words === undefined) return { job, address, none: 'no value written yet' }
        return {
          job,
          address,
          roundId: BigInt(words[0]!).toString(),
          answer: BigInt.asIntN(256, BigInt(words[1]!)).toString(),
          updatedAt: Number(BigInt(words[3]!)),
        }
      } catch (error) {
        return { job, address, none: error instanceof Error ? error.message : String(error) }
      }
    }),
  )
}

export function pushedValuesTable(rounds: readonly PushedValueRound[]): string {
  return renderTable(
    ['push feed', 'PushedValue', 'round', 'answer', 'updated (UTC)'],
    rounds.map((round) => [
      round.job,
      round.address,
      round.roundId ?? '-',
      round.answer ?? round.none ?? '-',
      round.updatedAt === undefined
        ? '-'
        : new Date(round.updatedAt * 1000).toISOString().slice(11, 19),
    ]),
  )
}

/** The 32-byte words of a call's result, or undefined when it reverted (PushedValue's NoData). */
function wordsOf(result: string | undefined): string[] | undefined {
  if (result === undefined || result.length < 2 + 5 * 64) return undefined
  return Array.from({ length: 5 }, (_, at) => `0x${result.slice(2 + at * 64, 2 + (at + 1) * 64)}`)
}

/** An eth_call at the latest block: its result, or undefined when the call reverted. */
async function ethCall(rpcUrl: string, to: string, data: string): Promise<string | undefined> {
  const response = await fetch(rpcUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'eth_call',
      params: [{ to, data }, 'latest'],
    }),
    signal: AbortSignal.timeout(5_000),
  })
  const body = (await response.json()) as { result?: string; error?: { message?: string } }
  if (body.error) {
    if (/revert/i.test(body.error.message ?? '')) return undefined
    throw new Error(`the chain answered: ${body.error.message ?? 'an error'}`)
  }
  return body.result
}
