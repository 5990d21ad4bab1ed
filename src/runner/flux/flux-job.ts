import { FeedrunnerError } from '../../config/errors.ts'
import type { Job } from '../../pipeline/job-spec/loader.ts'
import type { SpecOf } from '../../pipeline/job-spec/job-types.ts'
import { parseDuration } from '../../pipeline/duration.ts'
import { asFloat32 } from '../../pipeline/job-spec/flux-schema.ts'
import { parseSchedule, type CronSchedule } from '../../pipeline/job-spec/schedule.ts'
import type { Thresholds } from './decision.ts'

/** A loaded fluxmonitor job as the monitor runs it: its timers in milliseconds, its thresholds. */
export interface FluxJob extends Job {
  spec: SpecOf<'fluxmonitor'>
  /** Undefined when the timer is disabled. */
  pollTimerMs?: number
  idleTimerMs?: number
  /** When drumbeatEnabled: its schedule and the most it waits at random after a beat. */
  drumbeat?: { schedule: CronSchedule; randomDelayMs: number }
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
    drumbeat: spec.drumbeatEnabled ? drumbeatOf(spec) : undefined,
    thresholds: {
      relative: asFloat32(spec.threshold ?? '0'),
      absolute: asFloat32(spec.absoluteThreshold ?? '0'),
    },
    minPayment: spec.minPayment ?? 0n,
  }
}

function drumbeatOf(spec: SpecOf<'fluxmonitor'>): FluxJob['drumbeat'] {
  const parsed = parseSchedule(spec.drumbeatSchedule ?? '')
  // The loader refused a schedule that does not parse (fluxSpecProblems).
  if ('problem' in parsed)
    throw new FeedrunnerError(`${spec.name}: drumbeatSchedule: ${parsed.problem}`, {
      kind: 'config',
    })
  const randomDelayMs = parseDuration(spec.drumbeatRandomDelay ?? '0') ?? 0
  return { schedule: parsed.schedule, randomDelayMs }
}
