import { setTimeout as delay } from 'node:timers/promises'
import { reorg } from './chain-faults.ts'
import { cancelStorm } from './cancel-storm.ts'
import { restart, stopPart, type RunContext } from './context.ts'
import type { FaultPlan } from './schedule.ts'

/** Does one fault, start to end (a process killed is running again when this resolves). */
export async function runFault(context: RunContext, fault: FaultPlan): Promise<string> {
  const { stack } = context
  switch (fault.kind) {
    case 'kill': {
      const part = stack.parts.get(fault.part)
      if (!part) throw new Error(`no part named ${fault.part}`)
      await stopPart(context, part, fault.signal)
      await delay(fault.downMs)
      await restart(context, part)
      return `${fault.part} ${fault.signal}, down ${fault.downMs} ms`
    }
    case 'redis-restart':
      await stack.redis.restart(fault.signal, fault.downMs)
      return `Redis ${fault.signal}, down ${fault.downMs} ms`
    case 'redis-flush':
      await stack.redis.flush()
      return 'Redis FLUSHALL'
    case 'redis-failover':
      await stack.redis.failover()
      return 'Redis replica promoted'
    case 'rpc-cut':
      stack.rpcProxy.cut()
      await delay(fault.forMs)
      stack.rpcProxy.restore()
      return `RPC cut ${fault.forMs} ms`
    case 'rpc-slow':
      stack.rpcProxy.slow(fault.delayMs)
      await delay(fault.forMs)
      stack.rpcProxy.restore()
      return `RPC slowed by ${fault.delayMs} ms a call for ${fault.forMs} ms`
    case 'reorg': {
      const done = await reorg(
        stack.anvil.rpcUrl,
        fault.depth,
        fault.txs,
        context.schedule.blockTimeSeconds,
      )
      for (const hash of done.gone) context.gone.add(hash)
      const resent = await stack.wallet.resendUnmined()
      return `reorg of ${done.depth} blocks: ${done.removed} transactions taken away, ${done.back} ${fault.txs === 'reinclude' ? 'mined again' : 'back in the pool'}; the harness sent ${resent} of its own again`
    }
    case 'cancel-storm':
      return cancelStorm(context, fault)
  }
}
