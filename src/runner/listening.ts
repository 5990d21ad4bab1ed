import type { JsonRpcProvider } from 'ethers'
import type { Redis } from 'ioredis'
import type { Logger } from '../config/logger.ts'
import { createRequestListener, type RequestListener } from '../chain/listener/index.ts'
import type { RequestIntake } from './request-intake.ts'
import type { RunStore } from './run-record.ts'
import type { RunnerOptions } from './runner-options.ts'
import { createReconciler, type Reconciler, type Recovery } from './recovery/index.ts'

/**
 * The listening half of a runner: the listener (starting, with no checkpoint in Redis, at the oldest
 * request that may still be open), what recovery says of each request it delivers, and the reconciler
 * that keeps run records in line with the Operator's logs.
 */
export async function startListening(parts: {
  options: RunnerOptions
  provider: JsonRpcProvider
  redis: Redis
  runs: RunStore
  intake: RequestIntake
  recovery: Recovery
  onError: (error: Error) => void
  log: Logger
}): Promise<{ listener: RequestListener; reconciler: Reconciler }> {
  const { options, provider, runs, intake, recovery } = parts
  // With no checkpoint in Redis (a first start, or a Redis that lost it while no runner ran), the
  // listener starts at the oldest request that may still be open, not at the head.
  const fromBlock = options.fromBlock ?? (await recovery.openWindow())
  const listener = createRequestListener({
    provider,
    chainId: options.chainId,
    operators: options.registry.operators(),
    specIds: options.registry.specFilters(),
    redis: parts.redis,
    prefix: `${options.prefix}:listener`,
    onRequest: async (event) => {
      const verdict = recovery.verdict(event)
      if (verdict === 'skip') return
      if (verdict === 'run-again') await runs.reopen(event.requestId)
      await intake.onRequest(event)
    },
    onCancel: intake.onCancel,
    onError: parts.onError,
    pollIntervalMs: options.pollIntervalMs,
    fromBlock,
  })
  await listener.start()
  const reconciler = createReconciler({
    runs,
    provider,
    operators: options.registry.operators(),
    log: parts.log,
    everyMs: options.reconcileIntervalMs,
    logRangeBlocks: options.logRangeBlocks,
  })
  reconciler.start()
  return { listener, reconciler }
}
