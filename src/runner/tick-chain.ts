import { Interface, isAddress, toBeHex, zeroPadValue, type JsonRpcProvider } from 'ethers'
import { z } from 'zod'
import { FeedrunnerError } from '../config/errors.ts'
import { DEFAULT_LOG_RANGE_BLOCKS } from '../chain/operator-logs.ts'
import { poolTransactions } from '../chain/pooled-transactions.ts'
import type { Job } from '../pipeline/index.ts'

/**
 * A tick's write as the chain carries it (contracts/PushedValue.sol): `push(answer, tick)` and its
 * `ValuePushed` log, indexed by tick. A cron job writing elsewhere is read for nothing and written
 * as its claims say.
 */
const TICK_WRITE = new Interface([
  'function push(int256 answer, uint256 tick)',
  'event ValuePushed(uint80 indexed roundId, uint256 indexed tick, int256 answer, uint256 updatedAt)',
])
const VALUE_PUSHED = TICK_WRITE.getEvent('ValuePushed')!.topicHash

/** Where the runner reads a tick's writes: the chain's provider and its widest log range. */
export interface TickChain {
  provider: JsonRpcProvider
  logRangeBlocks?: number
}

/** Where a tick's write was found: mined (its block), or waiting in the node's pool. */
export type TickWrite = { tick: number; block: number } | { tick: number; pooled: true }

/** The addresses a cron job's ethtx tasks write to, where the spec names one outright. */
export function tickTargets(job: Job): string[] {
  return job.tasks
    .filter((task) => task.type === 'ethtx' && isAddress(task.attributes.to))
    .map((task) => task.attributes.to!.toLowerCase())
}

/**
 * Which of `ticks` the chain holds a write of already, mined in the last log range of blocks (a tick
 * claimable is at most TICK_CATCH_UP_MS old, so its write is well within it), and, for `pooledToo`,
 * still in the node's pool (sent, then a reorg put it back, or not mined yet). Redis is a cache of
 * the chain: a tick whose claim Redis lost (a restart, a failover to a replica that lacked it, a
 * flush) is then not written twice.
 */
export async function tickWritesOnChain(
  chain: TickChain,
  targets: readonly string[],
  ticks: readonly number[],
  pooledToo: readonly number[],
): Promise<TickWrite[]> {
  if (targets.length === 0 || ticks.length === 0) return []
  try {
    const head = await chain.provider.getBlockNumber()
    const range = chain.logRangeBlocks ?? DEFAULT_LOG_RANGE_BLOCKS
    // One range: the ticks' logs, not an Operator's, and none older than the range can be claimed.
    const logs = await chain.provider.getLogs({
      address: [...targets],
      topics: [VALUE_PUSHED, null, ticks.map((tick) => zeroPadValue(toBeHex(tick), 32))],
      fromBlock: Math.max(0, head - range + 1),
      toBlock: head,
    })
    const mined: TickWrite[] = logs.map((log) => ({
      tick: Number(BigInt(log.topics[2] ?? 0)),
      block: log.blockNumber,
    }))
    const left = pooledToo.filter((tick) => !mined.some((write) => write.tick === tick))
    return [...mined, ...(await pooledWrites(chain.provider, targets, left))]
  } catch (error) {
    throw new FeedrunnerError("could not read the chain for the cron ticks' writes", {
      kind: 'unavailable',
      cause: error,
    })
  }
}

const pooledTx = z.object({ to: z.string().nullish(), input: z.string() }).passthrough()

/** The writes of `ticks` to `targets` the node's pool holds (none where the node does not tell). */
async function pooledWrites(
  provider: JsonRpcProvider,
  targets: readonly string[],
  ticks: readonly number[],
): Promise<TickWrite[]> {
  if (ticks.length === 0) return []
  const pooled = await poolTransactions((method, params) => provider.send(method, params))
  const writes: TickWrite[] = []
  for (const { tx: raw } of pooled ?? []) {
    const tx = pooledTx.safeParse(raw)
    if (!tx.success || !targets.includes(tx.data.to?.toLowerCase() ?? '')) continue
    const tick = tickOfCall(tx.data.input)
    if (tick !== undefined && ticks.includes(tick)) writes.push({ tick, pooled: true })
  }
  return writes
}

/** The tick a `push` call writes; undefined for any other call. */
function tickOfCall(data: string): number | undefined {
  try {
    const call = TICK_WRITE.parseTransaction({ data })
    return call?.name === 'push' ? Number(call.args[1]) : undefined
  } catch {
    return undefined
  }
}
