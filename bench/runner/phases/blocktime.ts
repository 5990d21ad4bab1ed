/**
 * The block-time phase: what an operator pays for on a real chain, where blocks come on a clock, not
 * one per transaction. anvil mines every BENCH_BLOCK_TIME seconds (2 by default, 12 like Ethereum
 * with BENCH_BLOCK_TIME=12); the runner runs with its default settings (confirmations, poll interval)
 * behind a counting JSON-RPC proxy (`rpc-proxy.ts`), over one transport (ws or http) per phase.
 *
 * 1. Idle: BENCH_IDLE_SECONDS with no request, from ten blocks after the runner started (the heads it
 *    learns the chain's block time over): the runner's calls per block and per hour.
 * 2. Spread: BENCH_BLOCKTIME_REQUESTS requests, evenly over BENCH_BLOCKTIME_SPREAD_SECONDS (sent
 *    straight to anvil: the bench's own calls are not the runner's bill), then BENCH_BLOCKTIME_TAIL_BLOCKS
 *    blocks after the last fulfilment (the sender watches a mined fulfilment until it is
 *    CHAIN_FINALITY_DEPTH deep, and that is the request's cost too). A request's calls are the
 *    stretch's calls less the shared per-block reads (the head, the logs: one a block at most, for
 *    all requests in it) and less the idle rate of the others, divided by the requests.
 *
 * Meanwhile other keys send BENCH_BLOCKTIME_TRAFFIC transactions a block (default 1) that log
 * (chain-traffic.ts), as a real chain's blocks hold others' logs: 0 leaves the blocks empty.
 *
 * Blocks to fulfil: from the block where a request is confirmed (its block + confirmations - 1, the
 * first head at which the runner may run it) to its fulfilment's block; 1 = the very next block.
 */
import { STEPS_NEEDED } from '../../../src/chain/block-interval.ts'
import { freePort } from '../../../src/dev/ports.ts'
import { requestsOfTransactions } from '../../../src/dev/requests-mined.ts'
import {
  sendRawInNonceOrder,
  waitForFulfilments,
  waitForSigned,
} from '../../../src/dev/requests.ts'
import type { FeedrunnerProcess } from '../../../src/dev/feedrunner-process.ts'
import { minedSender, openChain, startPart, type Chain, type Context } from '../load.ts'
import { round, rpc, summary } from '../measure.ts'
import {
  callsBetween,
  startRpcProxy,
  type RpcCounts,
  type RpcProxy,
} from '../../../src/dev/rpc-call-counter.ts'
import {
  BLOCK_TIME,
  BLOCK_TIME_PHASE_MS,
  BLOCK_TIME_REQUESTS,
  BLOCK_TIME_SPREAD_SECONDS,
  BLOCK_TIME_TAIL_BLOCKS,
  BLOCK_TIME_TRAFFIC,
  IDLE_SECONDS,
  RUNNER_KEYS,
  step,
} from '../settings.ts'
import { redisBill, redisCounts, type BlockTimeRedis, type RedisCounts } from './blocktime-redis.ts'
import { meanBloomFill, startChainTraffic, type ChainTraffic } from './chain-traffic.ts'
import { signRequests } from './outcome.ts'

export interface BlockTimeResult {
  transport: 'ws' | 'http'
  blockTime: {
    seconds: number
    requests: number
    fulfilled: number
    confirmations: number
    /** Share of the requests fulfilled in the block right after the one that confirmed them. */
    nextBlockShare: number
    blocksToFulfil: { p50: number; p99: number; max: number }
  }
  rpc: {
    idleCallsPerBlock: number
    idleCallsPerHour: number
    /**
     * Calls per request beyond the shared per-block reads (heads and logs, SHARED_PER_BLOCK: one a
     * block at most, whatever the number of requests in it) and the idle rate of the others.
     */
    callsPerRequest: number
    /** Every call beyond the idle rate over the same blocks, shared per-block reads too, per request. */
    callsPerRequestBeyondIdle: number
    /** The shared per-block reads per block while requests came (idle: idleCallsPerBlock). */
    sharedReadsPerBlock: number
    byMethod: {
      /** Idle: calls per block. */
      idlePerBlock: Record<string, number>
      /** Spread: calls per request beyond the idle rate. */
      perRequest: Record<string, number>
    }
    /** newHeads (and other) notifications pushed to the runner, per block, idle. */
    idleNotificationsPerBlock: number
    idleBlocks: number
    spreadBlocks: number
    /** Others' transactions on the chain meanwhile (BENCH_BLOCKTIME_TRAFFIC a block). */
    trafficTransactions: number
    /** The idle blocks' mean share of logs-bloom bits set: how much a bloom can rule out. */
    idleBloomFill: number
  }
  /** Redis commands (INFO commandstats, every process of the bench's installation), as `rpc` counts calls. */
  redis: BlockTimeRedis
}

/** The reads of a block the listener and the sender share, one a block at most: the head, the logs. */
const SHARED_PER_BLOCK = new Set(['eth_getBlockByNumber', 'eth_blockNumber', 'eth_getLogs'])

const blockNumber = async (chain: Chain) =>
  Number(await rpc<string>(chain.anvil.rpcUrl, 'eth_blockNumber'))

/** Resolves once the chain has mined `block` (polled on anvil itself, not through the proxy). */
async function untilBlock(chain: Chain, block: number): Promise<void> {
  while ((await blockNumber(chain)) < block)
    await new Promise((resolveLater) => setTimeout(resolveLater, 100))
}

/** Waits for the next block, and answers its number: stretches start and end on a block. */
async function nextBlock(chain: Chain): Promise<number> {
  const now = await blockNumber(chain)
  await untilBlock(chain, now + 1)
  return blockNumber(chain)
}

async function startRunner(
  ctx: Context,
  proxy: RpcProxy,
  transport: 'ws' | 'http',
  fromBlock: number,
): Promise<FeedrunnerProcess> {
  // The runner's own defaults: no CHAIN_POLL_INTERVAL_MS of the burst phases' (100 ms, for a dev
  // chain) unless the caller set one.
  const env: Record<string, string> = { ...ctx.baseEnv }
  if (process.env.CHAIN_POLL_INTERVAL_MS === undefined) delete env.CHAIN_POLL_INTERVAL_MS
  return startPart(
    `runner, block time ${BLOCK_TIME} s, ${transport}`,
    ['runner'],
    {
      ...env,
      RPC_URL: transport === 'ws' ? proxy.wsUrl : proxy.httpUrl,
      QUEUE_PREFIX: `${ctx.prefix}-blocktime-${transport}`,
      NODE_PRIVATE_KEY: RUNNER_KEYS[0] as string,
      RUNNER_FROM_BLOCK: String(fromBlock),
      OPERATIONS_PORT: String(await freePort()),
      METRICS_PORT: String(await freePort()),
    },
    /runner started/,
  )
}

/** An idle stretch's bounds and counts: blocks, the proxy's calls, Redis's commands. */
interface IdleStretch {
  from: number
  to: number
  before: RpcCounts
  after: RpcCounts
  redisBefore: RedisCounts
  redisAfter: RedisCounts
}

/**
 * IDLE_SECONDS with no request, from a block to a block, once the runner's start-up reads are behind
 * it and it learned the chain's block time (it reads the head every poll interval until then;
 * block-interval.ts).
 */
async function idleStretch(
  ctx: Context,
  chain: Chain,
  proxy: RpcProxy,
  label: string,
): Promise<IdleStretch> {
  await untilBlock(chain, (await blockNumber(chain)) + STEPS_NEEDED + 2)
  const from = await nextBlock(chain)
  const before = proxy.snapshot()
  const redisBefore = await redisCounts(ctx)
  step(`${label}: idle for ${IDLE_SECONDS} s`)
  await new Promise((resolveLater) => setTimeout(resolveLater, IDLE_SECONDS * 1000))
  const to = await nextBlock(chain)
  const after = proxy.snapshot()
  const redisAfter = await redisCounts(ctx)
  const overWs = callsBetween(
    { ...before, calls: before.wsCalls },
    { ...after, calls: after.wsCalls },
  )
  step(`${label}: idle, over WebSocket: ${JSON.stringify(overWs)} in ${to - from} blocks`)
  return { from, to, before, after, redisBefore, redisAfter }
}

/**
 * The requests, spread over BLOCK_TIME_SPREAD_SECONDS and sent straight to anvil, then
 * BLOCK_TIME_TAIL_BLOCKS blocks after the last fulfilment: the requests, their fulfilments, and the
 * stretch's last block and counts.
 */
async function spreadStretch(
  ctx: Context,
  chain: Chain,
  proxy: RpcProxy,
  signed: Awaited<ReturnType<typeof signRequests>>,
  since: { head: number; idleTo: number },
) {
  const sentAt = await sendRawInNonceOrder(chain.anvil.rpcUrl, signed.raws, {
    perSecond: BLOCK_TIME_REQUESTS / BLOCK_TIME_SPREAD_SECONDS,
  })
  // A block-time chain leaves a sender's nonce still for a block: no resend before a few blocks.
  await waitForSigned(minedSender(chain.anvil.rpcUrl), signed, {
    timeoutMs: BLOCK_TIME_PHASE_MS,
    stallMs: BLOCK_TIME * 5_000,
  })
  const fromBlock = since.head + 1
  const sent = await requestsOfTransactions(
    chain.dev.provider,
    chain.dev.addresses.operator,
    signed.hashes,
    sentAt,
    { fromBlock, timeoutMs: BLOCK_TIME_PHASE_MS },
  )
  const fulfilled = await waitForFulfilments(
    chain.dev.consumer,
    chain.dev.provider,
    sent.map((item) => item.requestId),
    { fromBlock, timeoutMs: BLOCK_TIME_PHASE_MS, pollIntervalMs: 500 },
  )
  const lastFulfilment = Math.max(
    since.idleTo,
    ...[...fulfilled.values()].map((item) => item.blockNumber),
  )
  await untilBlock(chain, lastFulfilment + BLOCK_TIME_TAIL_BLOCKS)
  const to = await nextBlock(chain)
  return { sent, fulfilled, to, after: proxy.snapshot(), redisAfter: await redisCounts(ctx) }
}

type Spread = Awaited<ReturnType<typeof spreadStretch>>

/** Blocks from a request's confirmation to its fulfilment, and the share fulfilled in the next block. */
function blockTimeOf(ctx: Context, { sent, fulfilled }: Spread): BlockTimeResult['blockTime'] {
  const blocksToFulfil = sent.flatMap((item) => {
    const fulfilment = fulfilled.get(item.requestId)
    return fulfilment ? [fulfilment.blockNumber - (item.blockNumber + ctx.confirmations - 1)] : []
  })
  const { p50, p99, max } = summary(blocksToFulfil)
  return {
    seconds: BLOCK_TIME,
    requests: sent.length,
    fulfilled: fulfilled.size,
    confirmations: ctx.confirmations,
    nextBlockShare: round(
      blocksToFulfil.filter((blocks) => blocks === 1).length / Math.max(1, sent.length),
      3,
    ),
    blocksToFulfil: { p50, p99, max },
  }
}

export async function runBlockTimePhase(
  ctx: Context,
  transport: 'ws' | 'http',
): Promise<BlockTimeResult> {
  const label = `block time ${BLOCK_TIME} s, ${transport}`
  const chain = await openChain(ctx.artifacts, { blockTimeSeconds: BLOCK_TIME })
  const proxy = await startRpcProxy(chain.anvil)
  let runner: FeedrunnerProcess | undefined
  let traffic: ChainTraffic | undefined
  try {
    const signed = await signRequests(ctx, chain, BLOCK_TIME_REQUESTS)
    const head = await blockNumber(chain)
    if (BLOCK_TIME_TRAFFIC > 0) traffic = await startChainTraffic(chain, BLOCK_TIME_TRAFFIC)
    runner = await startRunner(ctx, proxy, transport, head + 1)
    const idle = await idleStretch(ctx, chain, proxy, label)
    const idleBlocks = idle.to - idle.from
    const spreadBefore = proxy.snapshot()
    step(
      `${label}: ${BLOCK_TIME_REQUESTS} requests over ${BLOCK_TIME_SPREAD_SECONDS} s, then ${BLOCK_TIME_TAIL_BLOCKS} blocks`,
    )
    const spread = await spreadStretch(ctx, chain, proxy, signed, { head, idleTo: idle.to })
    const spreadBlocks = spread.to - idle.to
    if (spread.fulfilled.size < spread.sent.length)
      console.error(
        `${label}: only ${spread.fulfilled.size} of ${spread.sent.length} fulfilled\n${runner.output().slice(-3_000)}`,
      )
    const idleCounts = { before: idle.before, after: idle.after, blocks: idleBlocks }
    return {
      transport,
      blockTime: blockTimeOf(ctx, spread),
      rpc: {
        ...rpcBill(
          { ...idleCounts, seconds: idleBlocks * BLOCK_TIME },
          { before: spreadBefore, after: spread.after, blocks: spreadBlocks },
          spread.sent.length,
        ),
        trafficTransactions: traffic?.sent ?? 0,
        idleBloomFill: round(await meanBloomFill(chain, idle.from + 1, idle.to), 3),
      },
      redis: redisBill(
        { before: idle.redisBefore, after: idle.redisAfter, blocks: idleBlocks },
        { before: idle.redisAfter, after: spread.redisAfter, blocks: spreadBlocks },
        spread.sent.length,
      ),
    }
  } finally {
    await traffic?.stop()
    await runner?.stop()
    await proxy.stop()
    await chain.stop()
    ctx.anvilPeakRssMb.push(chain.peakRssMb)
  }
}

interface Stretch {
  before: RpcCounts
  after: RpcCounts
  blocks: number
}

/** The runner's calls idle and while requests came, per block and per request. */
function rpcBill(
  idleStretch: Stretch & { seconds: number },
  spreadStretch: Stretch,
  requests: number,
): Omit<BlockTimeResult['rpc'], 'trafficTransactions' | 'idleBloomFill'> {
  const idleBlocks = idleStretch.blocks
  const spreadBlocks = spreadStretch.blocks
  const idle = callsBetween(idleStretch.before, idleStretch.after)
  const idleCalls = total(idle)
  const idleRate = idleCalls / Math.max(1, idleBlocks)
  const spread = callsBetween(spreadStretch.before, spreadStretch.after)
  const [spreadShared, spreadOwn] = splitShared(spread)
  const idleOwnRate = total(splitShared(idle)[1]) / Math.max(1, idleBlocks)
  return {
    idleCallsPerBlock: round(idleRate, 2),
    idleCallsPerHour: round((idleCalls / Math.max(1, idleStretch.seconds)) * 3600, 0),
    callsPerRequest: round((total(spreadOwn) - idleOwnRate * spreadBlocks) / requests, 2),
    callsPerRequestBeyondIdle: round((total(spread) - idleRate * spreadBlocks) / requests, 2),
    sharedReadsPerBlock: round(total(spreadShared) / Math.max(1, spreadBlocks), 2),
    byMethod: {
      idlePerBlock: scaled(idle, (calls) => calls / Math.max(1, idleBlocks)),
      perRequest: scaled(spread, (calls, method) => {
        const idlePerBlock = (idle[method] ?? 0) / Math.max(1, idleBlocks)
        return (calls - idlePerBlock * spreadBlocks) / requests
      }),
    },
    idleNotificationsPerBlock: round(
      notifications(idleStretch.before, idleStretch.after) / Math.max(1, idleBlocks),
      2,
    ),
    idleBlocks,
    spreadBlocks,
  }
}

function total(calls: Record<string, number>): number {
  return Object.values(calls).reduce((sum, value) => sum + value, 0)
}

/** The calls split into the shared per-block reads and the others. */
function splitShared(
  calls: Record<string, number>,
): [Record<string, number>, Record<string, number>] {
  const entries = Object.entries(calls)
  return [
    Object.fromEntries(entries.filter(([method]) => SHARED_PER_BLOCK.has(method))),
    Object.fromEntries(entries.filter(([method]) => !SHARED_PER_BLOCK.has(method))),
  ]
}

function notifications(before: RpcCounts, after: RpcCounts): number {
  return after.notifications - before.notifications
}

function scaled(
  calls: Record<string, number>,
  scale: (calls: number, method: string) => number,
): Record<string, number> {
  return Object.fromEntries(
    Object.entries(calls).map(([method, value]) => [method, round(scale(value, method), 2)]),
  )
}
