import { setTimeout as delay } from 'node:timers/promises'
import { reorg } from './chain-faults.ts'
import { cancelStorm } from './cancel-storm.ts'
import { restart, stopPart, type RunContext } from './context.ts'
import type { FaultWindow } from './history.ts'
import { runsRunner, type FaultPlan, type Schedule } from './schedule.ts'

/** Does one fault and keeps when it began and ended (and which blocks a reorg replaced); answers what it did. */
export async function runTimedFault(context: RunContext, fault: FaultPlan): Promise<string> {
  const fromMs = Date.now()
  let fromBlock: number | undefined
  try {
    const done = await runFault(context, fault)
    fromBlock = done.fromBlock
    return done.said
  } finally {
    context.faults.push({
      ...faultNames(fault, context.schedule),
      fromMs,
      toMs: Date.now(),
      ...(fromBlock === undefined ? {} : { fromBlock }),
    })
  }
}

/** How the report names a fault, and whether it stops a runner. */
export function faultNames(
  fault: FaultPlan,
  schedule: Pick<Schedule, 'parts'>,
): Pick<FaultWindow, 'kind' | 'label' | 'part' | 'stopsRunner'> {
  const kind = fault.kind
  switch (fault.kind) {
    case 'kill': {
      const part = schedule.parts.find((plan) => plan.name === fault.part)
      const stopsRunner = part !== undefined && runsRunner(part.kind)
      return { kind, label: `${fault.signal} of ${fault.part}`, part: fault.part, stopsRunner }
    }
    case 'cancel-storm':
      return { kind, label: 'cancel storm', stopsRunner: true }
    default:
      return { kind, label: FAULT_LABELS[fault.kind], stopsRunner: false }
  }
}

const FAULT_LABELS: Record<Exclude<FaultPlan['kind'], 'kill' | 'cancel-storm'>, string> = {
  'redis-restart': 'Redis restart',
  'redis-flush': 'Redis FLUSHALL',
  'redis-failover': 'Redis failover',
  'rpc-cut': 'RPC cut',
  'rpc-slow': 'RPC slowdown',
  reorg: 'reorg',
}

/** Does one fault, start to end (a process killed is running again when this resolves). */
async function runFault(
  context: RunContext,
  fault: FaultPlan,
): Promise<{ said: string; fromBlock?: number }> {
  const said = (text: string) => ({ said: text })
  const { stack } = context
  switch (fault.kind) {
    case 'kill': {
      const part = stack.parts.get(fault.part)
      if (!part) throw new Error(`no part named ${fault.part}`)
      await stopPart(context, part, fault.signal)
      await delay(fault.downMs)
      await restart(context, part)
      return said(`${fault.part} ${fault.signal}, down ${fault.downMs} ms`)
    }
    case 'redis-restart':
      await stack.redis.restart(fault.signal, fault.downMs)
      return said(`Redis ${fault.signal}, down ${fault.downMs} ms`)
    case 'redis-flush':
      await stack.redis.flush()
      return said('Redis FLUSHALL')
    case 'redis-failover':
      await stack.redis.failover()
      return said('Redis replica promoted')
    case 'rpc-cut':
      stack.rpcProxy.cut()
      await delay(fault.forMs)
      stack.rpcProxy.restore()
      return said(`RPC cut ${fault.forMs} ms`)
    case 'rpc-slow':
      stack.rpcProxy.slow(fault.delayMs)
      await delay(fault.forMs)
      stack.rpcProxy.restore()
      return said(`RPC slowed by ${fault.delayMs} ms a call for ${fault.forMs} ms`)
    case 'reorg': {
      const done = await reorg(
        stack.anvil.rpcUrl,
        fault.depth,
        fault.txs,
        context.schedule.blockTimeSeconds,
      )
      for (const hash of done.gone) context.gone.add(hash)
      const resent = await stack.wallet.resendUnmined()
      return {
        said: `reorg of ${done.depth} blocks from block ${done.fromBlock}: ${done.removed} transactions taken away, ${done.back} ${fault.txs === 'reinclude' ? 'mined again' : 'back in the pool'}; the harness sent ${resent} of its own again`,
        fromBlock: done.fromBlock,
      }
    }
    case 'cancel-storm':
      return said(await cancelStorm(context, fault))
  }
}
