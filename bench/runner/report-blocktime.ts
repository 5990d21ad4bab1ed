/**
 * The block-time phases as the bench prints them: blocks from confirmation to fulfilment, the
 * runner's JSON-RPC calls by method (idle per block, per request beyond that), Redis commands the
 * same way, and issue 40's targets for them.
 */
import { round } from './measure.ts'
import { target, type Target } from './report.ts'
import { table } from './table.ts'
import type { BlockTimeResult } from './phases/blocktime.ts'

/** Blocks from a request's confirmation to its fulfilment's block, by transport. */
function printBlocksToFulfil(results: readonly BlockTimeResult[]): void {
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
}

/** A row of the RPC table: an idle figure and a per-request one for each transport. */
function billRow(
  results: readonly BlockTimeResult[],
  name: string,
  idle: (result: BlockTimeResult) => string,
  perRequest: (result: BlockTimeResult) => string,
): string[] {
  return [name, ...results.flatMap((result) => [idle(result), perRequest(result)])]
}

/** The runner's calls by method, idle per block and per request, then the bill's totals. */
function printRpcBill(results: readonly BlockTimeResult[]): void {
  const methods = [
    ...new Set(
      results.flatMap(({ rpc }) => [
        ...Object.keys(rpc.byMethod.idlePerBlock),
        ...Object.keys(rpc.byMethod.perRequest),
      ]),
    ),
  ].sort()
  const none = () => ''
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
      ...methods.map((method) =>
        billRow(
          results,
          method,
          ({ rpc }) => String(rpc.byMethod.idlePerBlock[method] ?? '-'),
          ({ rpc }) => String(rpc.byMethod.perRequest[method] ?? '-'),
        ),
      ),
      billRow(
        results,
        'all',
        ({ rpc }) => String(rpc.idleCallsPerBlock),
        ({ rpc }) => String(rpc.callsPerRequestBeyondIdle),
      ),
      billRow(results, 'a request, beyond the shared reads of its block', none, ({ rpc }) =>
        String(rpc.callsPerRequest),
      ),
      billRow(results, 'shared reads (head, logs) / block, requests coming', none, ({ rpc }) =>
        String(rpc.sharedReadsPerBlock),
      ),
      billRow(results, 'idle calls an hour', ({ rpc }) => String(rpc.idleCallsPerHour), none),
      billRow(
        results,
        'notifications / block',
        ({ rpc }) => String(rpc.idleNotificationsPerBlock),
        none,
      ),
      billRow(
        results,
        "others' transactions (BENCH_BLOCKTIME_TRAFFIC a block)",
        ({ rpc }) => String(rpc.trafficTransactions),
        none,
      ),
      billRow(
        results,
        'Redis commands (every process of the installation)',
        ({ redis }) => String(redis.idleCommandsPerBlock),
        ({ redis }) => String(redis.commandsPerRequest),
      ),
      billRow(
        results,
        'bloom bits set, idle blocks',
        ({ rpc }) => `${round(rpc.idleBloomFill * 100, 1)} %`,
        none,
      ),
    ]),
  )
}

export function printBlockTime(results: readonly BlockTimeResult[]): void {
  if (results.length === 0) return
  printBlocksToFulfil(results)
  printRpcBill(results)
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
