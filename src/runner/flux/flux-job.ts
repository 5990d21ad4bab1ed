import type { Job } from '../../pipeline/job-spec/loader.ts'
import type { SpecOf } from '../../pipeline/job-spec/job-types.ts'
import { parseDuration } from '../../pipeline/duration.ts'
import type { Thresholds } from './decision.ts'

/** A loaded fluxmonitor job as the monitor runs it: its timers in milliseconds, its thresholds. */
export interface FluxJob extends Job {
  spec: SpecOf<'fluxmonitor'>
  /** Undefined when the timer is disabled. */
  pollTimerMs?: number
  idleTimerMs?: number
  thresholds: Thresholds
  minPayment: bigint
}

export function isFluxJob(job: Job): job is Job & { spec: SpecOf<'fluxmonitor'> } {
  return job.spec.type === 'fluxmonitor'
}

/** The monitor's view of a loaded fluxmonitor job (the loader has checked its timers). */
export function fluxJobOf(job: Job & { spec: SpecOf<'fluxmonitor'> }): FluxJob {
  const spec = job.spec
  return {
    ...job,
    spec,
    pollTimerMs: spec.pollTimerDisabled ? undefined : parseDuration(spec.pollTimerPeriod ?? ''),
    idleTimerMs: spec.idleTimerDisabled ? undefined : parseDuration(spec.idleTimerPeriod ?? ''),
    thresholds: { relative: spec.threshold ?? '0', absolute: spec.absoluteThreshold ?? '0' },
    minPayment: spec.minPayment ?? 0n,
  }
}
