/**
 * The block-time phases as the bench prints them: blocks from confirmation to fulfilment, the
 * runner's JSON-RPC calls by method (idle per block, per request beyond that), Redis commands the
 * same way, and issue 40's targets for them.
 */
import { round } from './measure.ts'
import { target, type Target } from './report.ts'
import { table } from './table.ts'
import type { BlockTimeResult } from './phases/blocktime.ts'

export function printBlockTime(results: readonly BlockTimeResult[]): void {
  if (results.length === 0) return
  console.log(
    `\nblock-time chain (anvil --block-time ${results[0]?.blockTime.seconds}): blocks from a request's confirmation to its fulfilment's block`,
  )
  console.log(
    table([
      ['runner RPC', 'requests', 'fulfilled', 'next block', 'p50', 'p99', 'max'],
      ...results.map(({ transport, blockTime }) => [
        transport,
        String(blockTime.requests),
        String(blockTime.fulfilled),
        `${round(blockTime.nextBlockShare * 100, 1)} %`,
        String(blockTime.blocksToFulfil.p50),
        String(blockTime.blocksToFulfil.p99),
        String(blockTime.blocksToFulfil.max),
      ]),
    ]),
  )
  const methods = [
    ...new Set(
      results.flatMap(({ rpc }) => [
        ...Object.keys(rpc.byMethod.idlePerBlock),
        ...Object.keys(rpc.byMethod.perRequest),
      ]),
    ),
  ].sort()
  console.log(
    "\nthe runner's JSON-RPC calls on the block-time chain (a counting proxy in front of anvil): idle per block, and per request beyond the idle rate",
  )
  console.log(
    table([
      [
        'method',
        ...results.flatMap(({ transport }) => [
          `${transport}: idle/block`,
          `${transport}: /request`,
        ]),
      ],
      ...methods.map((method) => [
        method,
        ...results.flatMap(({ rpc }) => [
          String(rpc.byMethod.idlePerBlock[method] ?? '-'),
          String(rpc.byMethod.perRequest[method] ?? '-'),
        ]),
      ]),
      [
        'all',
        ...results.flatMap(({ rpc }) => [
          String(rpc.idleCallsPerBlock),
          String(rpc.callsPerRequestBeyondIdle),
        ]),
      ],
      [
        'a request, beyond the shared reads of its block',
        ...results.flatMap(({ rpc }) => ['', String(rpc.callsPerRequest)]),
      ],
      [
        'shared reads (head, logs) / block, requests coming',
        ...results.flatMap(({ rpc }) => ['', String(rpc.sharedReadsPerBlock)]),
      ],
      ['idle calls an hour', ...results.flatMap(({ rpc }) => [String(rpc.idleCallsPerHour), ''])],
      [
        'notifications / block',
        ...results.flatMap(({ rpc }) => [String(rpc.idleNotificationsPerBlock), '']),
      ],
      [
        "others' transactions (BENCH_BLOCKTIME_TRAFFIC a block)",
        ...results.flatMap(({ rpc }) => [String(rpc.trafficTransactions), '']),
      ],
      [
        'Redis commands (every process of the installation)',
        ...results.flatMap(({ redis }) => [
          String(redis.idleCommandsPerBlock),
          String(redis.commandsPerRequest),
        ]),
      ],
      [
        'bloom bits set, idle blocks',
        ...results.flatMap(({ rpc }) => [`${round(rpc.idleBloomFill * 100, 1)} %`, '']),
      ],
    ]),
  )
  printRedisSources(results)
}

/** With BENCH_REDIS_SOURCES=1: the block-time chain's Redis commands by what sent them. */
function printRedisSources(results: readonly BlockTimeResult[]): void {
  const sources = [
    ...new Set(results.flatMap(({ redis }) => Object.keys(redis.bySource?.perRequest ?? {}))),
  ].sort()
  if (sources.length === 0) return
  console.log(
    '\nRedis commands on the block-time chain by what sent them (BENCH_REDIS_SOURCES=1): idle per block, and per request beyond the idle rate',
  )
  console.log(
    table([
      [
        'source',
        ...results.flatMap(({ transport }) => [
          `${transport}: idle/block`,
          `${transport}: /request`,
        ]),
      ],
      ...sources.map((source) => [
        source,
        ...results.flatMap(({ redis }) => [
          String(redis.bySource?.idlePerBlock[source] ?? '-'),
          String(redis.bySource?.perRequest[source] ?? '-'),
        ]),
      ]),
    ]),
  )
}

/** Issue 40's targets for the block-time chain, per transport. */
export function blockTimeTargets(results: readonly BlockTimeResult[]): Target[] {
  return results.flatMap(({ transport, blockTime, rpc, redis }) => [
    target(
      `${transport}: >= 99 % fulfilled in the next block`,
      blockTime.nextBlockShare * 100,
      99,
      false,
      `% of ${blockTime.requests}, ${blockTime.seconds} s blocks`,
    ),
    target(
      `${transport}: idle <= 1 JSON-RPC call per block`,
      rpc.idleCallsPerBlock,
      1,
      true,
      `over ${rpc.idleBlocks} blocks`,
    ),
    target(
      `${transport}: <= 3 calls per request beyond the shared per-block reads`,
      rpc.callsPerRequest,
      3,
      true,
      `over ${rpc.spreadBlocks} blocks`,
    ),
    target(
      `${transport}: <= 80 Redis commands per request`,
      redis.commandsPerRequest,
      80,
      true,
      `beyond ${redis.idleCommandsPerBlock} a block idle, ${blockTime.seconds} s blocks`,
    ),
  ])
}
