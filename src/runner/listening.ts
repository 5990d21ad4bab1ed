import type { JsonRpcProvider } from 'ethers'
import type { Redis } from 'ioredis'
import type { Logger } from '../config/logger.ts'
import type { SharedClock } from '../metrics/index.ts'
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
  /** Redis's clock, by which run records are stamped and aged. */
  clock: SharedClock
  onError: (error: Error) => void
  log: Logger
}): Promise<{ listener: RequestListener; reconciler: Reconciler }> {
  const { options, provider, runs, intake, recovery } = parts
  // With no checkpoint in Redis (a first start, or a Redis that lost it while no runner ran), the
  // listener starts at RUNNER_FROM_BLOCK, else at the oldest request that may still be open, once
  // what the node's pool holds of the senders is mined (asked only then: a restart does not wait).
  // The window is read now all the same: its filter (recovery.verdict) sorts what a restart delivers.
  if (options.fromBlock === undefined) await recovery.openWindow()
  const fromBlock = () => recovery.firstBlockWithoutCheckpoint(options.fromBlock)
  const listener = createRequestListener({
    provider,
    chainId: options.chainId,
    operators: options.registry.operators(),
    specIds: options.registry.specFilters(),
    redis: parts.redis,
    prefix: `${options.prefix}:listener`,
    consumedTagKey: recovery.generationKey,
    onRequest: async (event) => {
      const verdict = await recovery.verdict(event)
      if (verdict.kind === 'closed') return intake.onClosed(event, verdict.closure)
      if (verdict.kind === 'expired') return intake.onExpired(event)
      if (verdict.kind === 'run-again') await runs.reopen(event.requestId)
      await intake.onRequest(event)
    },
    onCancel: intake.onCancel,
    onError: parts.onError,
    log: parts.log,
    label: options.chain.label,
    reportEveryMs: options.connections.outageReportEveryMs,
    pollIntervalMs: options.pollIntervalMs,
    fromBlock,
  })
  await listener.start()
  followJobs(options, listener, recovery, parts.onError)
  const reconciler = createReconciler({
    runs,
    clock: parts.clock,
    provider,
    // The registry's own list: a reload of the jobs folder changes what the next pass reads.
    operators: options.registry.operators(),
    log: parts.log,
    everyMs: options.reconcileIntervalMs,
    logRangeBlocks: options.logRangeBlocks,
    reorgs: () => listener.stats.reorgs,
  })
  reconciler.start()
  return { listener, reconciler }
}

/**
 * The listener follows the jobs as they change (src/runner/jobs-watch.ts): it reads the Operators and
 * spec ids of the set swapped in from its next scan on. A job added reads the logs again from the
 * oldest request that may still be open, so a request sent for it before it was loaded runs too (the
 * consumed markers keep every other request from running twice; recovery's window skips those the
 * Operator answered or that expired). Stopping the listener ends the subscription.
 */
function followJobs(
  options: RunnerOptions,
  listener: RequestListener,
  recovery: Recovery,
  onError: (error: Error) => void,
): void {
  const { registry } = options
  const unsubscribe = registry.onChange((change) => {
    listener.setOperators(registry.operators())
    listener.setSpecIds(registry.specFilters())
    if (change.added.length > 0)
      void recovery
        .openWindow()
        .then((fromBlock) => listener.rewind(fromBlock))
        .catch((error: unknown) =>
          onError(error instanceof Error ? error : new Error(String(error))),
        )
  })
  const stop = listener.stop.bind(listener)
  listener.stop = async () => {
    unsubscribe()
    await stop()
  }
}
