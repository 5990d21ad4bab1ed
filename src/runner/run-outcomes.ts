import { FeedrunnerError, withContext } from '../config/errors.ts'
import type { Logger } from '../config/logger.ts'
import type { OracleRequestEvent } from '../chain/operator.ts'
import { originOf, type TaskFailure } from '../pipeline/index.ts'
import {
  observeRun,
  recordReplay,
  recordRequest,
  type ReasonClass,
  type RunTriggerLabel,
} from '../metrics/index.ts'
import type { RunPatch, RunState, RunStore, RunSummary } from './run-record.ts'

export interface RequestOutcome {
  state: RunState
  reason?: string
  txHash?: string
}

/**
 * A run's failure in words, root cause first, then where: the task it began in, the job, the request
 * ("the feed service answered 404: no match; task fetch, job game-odds, request 0x4f1c"). Terminal
 * tasks that failed for one origin are told once.
 */
export function runFailures(
  request: OracleRequestEvent,
  job: string,
  failures: readonly TaskFailure[],
): FeedrunnerError[] {
  const seen = new Set<string>()
  const origins: FeedrunnerError[] = []
  for (const failure of failures) {
    const origin = originOf(failure)
    if (seen.has(origin.message)) continue
    seen.add(origin.message)
    origins.push(withContext(`request ${request.requestId}`, withContext(`job ${job}`, origin)))
  }
  return origins
}

/** The first error of class `type` in the failures' cause chains, if any (a cancel, a crash). */
export function causeIn<T extends Error>(
  failures: readonly unknown[],
  type: abstract new (...args: never[]) => T,
): T | undefined {
  for (const failure of failures)
    for (let at: unknown = failure; at instanceof Error; at = at.cause)
      if (at instanceof type) return at
  return undefined
}

/** What a finished run adds to the metrics: its job, a reason class (never the free text) and its start. */
export interface RunMetrics {
  job?: string
  reason: ReasonClass
  startedAt?: number
  /** Set when the run is a replay: counted in feedrunner_replays_total too. */
  replay?: number
  /** What started it (default: an oracle request). */
  trigger?: RunTriggerLabel
}

/** Writes a run's end (unless it is final already) and counts it once, by the write that made it so. */
export async function finish(
  runs: RunStore,
  requestId: string,
  patch: RunPatch,
  state: RunState,
  reason: string | undefined,
  log: Logger,
  metrics: RunMetrics,
): Promise<RequestOutcome> {
  const stored = await runs.update(requestId, { ...patch, state, ...(reason ? { reason } : {}) })
  if (
    stored.state === state &&
    (state === 'fulfilled' || state === 'errored' || state === 'refused')
  ) {
    recordRequest(metrics.job, state, metrics.reason, metrics.trigger)
    if (metrics.replay !== undefined) recordReplay(metrics.job, state)
    if (metrics.startedAt !== undefined) {
      const seconds = (performance.now() - metrics.startedAt) / 1_000
      observeRun(metrics.job, state, seconds, metrics.trigger)
    }
  }
  if (state === 'fulfilled') log.info({ txHash: stored.txHash }, 'run fulfilled')
  else
    log.warn({ state, reason, kind: patch.failure?.kind, replay: metrics.replay }, `run ${state}`)
  return outcomeOf(stored)
}

export function outcomeOf(run: RunSummary): RequestOutcome {
  return { state: run.state, reason: run.reason, txHash: run.txHash }
}
