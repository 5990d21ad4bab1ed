/**
 * Warm phases (BENCH_WARMUP): a node runs for weeks, and every phase starts its fulfiller fresh, so
 * V8 compiles the hot code during the measured burst (a quarter of the runner's CPU, and more of the
 * bare fulfiller's). A warm phase's process first answers a burst of its own, then the measured N:
 * the same requests, signed in one nonce run with the warm-up's, the counters read only after it.
 */
import type { SignedTransactions } from '../../../src/dev/requests.ts'
import type { Chain, Context } from '../load.ts'
import { rpc } from '../measure.ts'
import { recordPerf, WARM_LABEL_END } from '../perf-record.ts'
import { sendAndAwaitFulfilments, signRequests } from './outcome.ts'

/**
 * The most requests a warm-up sends at once. One burst of 3,000 lost a third of them from anvil's
 * pool and stalled; bursts of the measured size's order are what every phase already sends.
 */
const WARM_UP_BURST = 500

export interface WarmSigned {
  /** Sent and fulfilled before the phase's counters start; undefined for a cold phase. */
  warmUp: SignedTransactions | undefined
  measured: SignedTransactions
}

/** The phase's `count` requests, after `warmUp` more when the phase is a warm one. */
export async function signPhaseRequests(
  ctx: Context,
  chain: Chain,
  count: number,
  warmUp = 0,
): Promise<WarmSigned> {
  const all = await signRequests(ctx, chain, warmUp + count)
  if (warmUp === 0) return { warmUp: undefined, measured: all }
  return { warmUp: sliceOf(all, 0, warmUp), measured: sliceOf(all, warmUp) }
}

/** The label of a phase's process: a warm one's ends in WARM_LABEL_END (perf-record.ts). */
export function phaseLabel(label: string, warmUp: number | undefined): string {
  return warmUp ? `${label}${WARM_LABEL_END}` : label
}

/**
 * Sends the warm-up, in bursts of at most WARM_UP_BURST, and waits until the fulfiller (process
 * `pid`, named `label`) has answered all of it; BENCH_PERF's recording of it starts then.
 */
export async function warmUpWith(
  chain: Chain,
  signed: SignedTransactions | undefined,
  label: string,
  pid: number,
): Promise<void> {
  if (!signed) return
  const total = signed.raws.length
  for (let start = 0; start < total; start += WARM_UP_BURST) {
    const burst = sliceOf(signed, start, start + WARM_UP_BURST)
    const head = Number(await rpc<string>(chain.anvil.rpcUrl, 'eth_blockNumber'))
    const delivered = await sendAndAwaitFulfilments(chain, burst, {
      label: `${label}: warm-up ${start + burst.raws.length}/${total}`,
      fromBlock: head + 1,
    })
    if (delivered.fulfilled.size < burst.raws.length)
      throw new Error(
        `${label}: ${delivered.fulfilled.size} of ${burst.raws.length} warm-up requests fulfilled; the warm figures would be cold ones`,
      )
  }
  await recordPerf(label, pid, { afterWarmUp: true })
}

function sliceOf(signed: SignedTransactions, start: number, end?: number): SignedTransactions {
  return {
    from: signed.from,
    firstNonce: signed.firstNonce + start,
    raws: signed.raws.slice(start, end),
    hashes: signed.hashes.slice(start, end),
  }
}
