/**
 * What the chain did in each phase, as the bench prints it: anvil's CPU by the blocks it mined, and
 * (BENCH_RPC_CALLS=1) the JSON-RPC calls it served.
 */
import { round } from './measure.ts'
import { table } from './table.ts'
import type { BareResult } from './phases/bare.ts'
import type { Outcome } from './phases/outcome.ts'
import type { RunnerPhaseResult } from './phases/runner-phase.ts'

/**
 * anvil's CPU by the blocks it mined. A block costs it several times a read (its transactions run,
 * its state is committed, its head goes to every subscriber), and automine cuts one JSON-RPC batch of
 * transactions into several blocks; so the phases' ms per request differ mostly by their block
 * counts, and the rate, which on 2 cores follows every process's CPU, with them.
 */
export function printAnvilBlocks(
  bare: BareResult | undefined,
  phases: readonly RunnerPhaseResult[],
): void {
  const row = (label: string, outcome: Outcome, anvilMsPerRequest: number | undefined) => {
    const perBlock =
      anvilMsPerRequest === undefined || outcome.blocks === 0
        ? '-'
        : String(round((anvilMsPerRequest * outcome.requests) / outcome.blocks, 2))
    return [
      label,
      String(outcome.blocks),
      String(outcome.blockKinds.withFulfilments),
      perBlock,
      String(anvilMsPerRequest ?? '-'),
    ]
  }
  console.log(
    "\nanvil's CPU by the blocks it mined (automine: a batch of transactions can take several blocks)",
  )
  console.log(
    table([
      ['', 'blocks', 'with fulfilments', 'anvil ms per block', 'anvil ms per request'],
      ...(bare ? [row('bare fulfiller', bare, bare.anvilCpuMsPerRequest)] : []),
      ...phases.map((phase) => row(phase.label, phase, phase.cpuMsPerRequest.anvil)),
    ]),
  )
}

/**
 * With BENCH_RPC_CALLS=1: the JSON-RPC calls each phase's anvil served per request, by method. The
 * bench's own are in every column alike: its requests (one eth_sendRawTransaction each), its block
 * watcher's reads and its pool backstop's (txpool_status, anvil_getAutomine).
 */
export function printRpcCalls(
  bare: BareResult | undefined,
  phases: readonly RunnerPhaseResult[],
): void {
  const columns = [
    ...(bare?.rpcCallsPerRequest ? [['bare fulfiller', bare.rpcCallsPerRequest] as const] : []),
    ...phases.flatMap((phase) =>
      phase.rpcCallsPerRequest ? [[phase.label, phase.rpcCallsPerRequest] as const] : [],
    ),
  ]
  if (columns.length === 0) return
  const totals = new Map<string, number>()
  for (const [, calls] of columns)
    for (const [method, value] of Object.entries(calls))
      totals.set(method, (totals.get(method) ?? 0) + value)
  const methods = [...totals].sort((a, b) => b[1] - a[1]).map(([method]) => method)
  const sum = (calls: Record<string, number>) =>
    String(
      round(
        Object.values(calls).reduce((all, value) => all + value, 0),
        2,
      ),
    )
  console.log(
    "\nJSON-RPC calls per request by method (BENCH_RPC_CALLS=1: anvil's log; the bench's own in every column: its requests, block watcher and pool backstop)",
  )
  console.log(
    table([
      ['', ...columns.map(([label]) => label)],
      ...methods.map((method) => [
        method,
        ...columns.map(([, calls]) => String(calls[method] ?? '-')),
      ]),
      ['all shown', ...columns.map(([, calls]) => sum(calls))],
    ]),
  )
}
