import type { Job as QueueJob } from 'bullmq'
import { FeedrunnerError } from '../config/errors.ts'
import { parseSchedule } from '../pipeline/index.ts'
import type { LoadedJob } from './job-registry.ts'
import type { PipelineWorkerOptions } from './pipeline-worker.ts'
import { runPushed } from './push-run.ts'
import type { RunAttempt } from './quarantine.ts'
import type { RequestOutcome } from './run-outcomes.ts'
import type { RunRecord } from './run-record.ts'
import { tickTargets, tickWritesOnChain } from './tick-chain.ts'
import { claimTicks, tickPayloadSchema, tickRunId, type TickPayload } from './ticks.ts'

/** A tick that could not be named: Redis's clock is not read yet. It goes back to the queue. */
class ClockUnreadError extends FeedrunnerError {
  override readonly name = 'ClockUnreadError'
  constructor() {
    super("a cron tick is named by Redis's clock, which this runner has not read yet", {
      kind: 'unavailable',
    })
  }
}

/**
 * Runs one firing of a cron job's schedule: claims the tick its time is nearest to by Redis's clock
 * (once across every runner: a duplicate firing does nothing), then runs the job's pipeline as a
 * request's is run (the same worker, retry policy, sender and run record, its trigger `tick`).
 */
export async function runTick(
  queueJob: QueueJob<TickPayload>,
  options: PipelineWorkerOptions & RunAttempt,
): Promise<RequestOutcome | undefined> {
  const firing = tickPayloadSchema.safeParse(queueJob.data)
  // A firing an earlier release queued names no tick: the ticker adds the next one.
  if (!firing.success) return undefined
  const payload = firing.data
  const loaded = options.registry.jobs.find(
    (job) => job.externalJobId === payload.externalJobId && job.job.spec.type === 'cron',
  )
  const spec = loaded?.job.spec
  // A job removed while its firing waited: the ticker adds no more of its firings.
  if (!loaded || spec?.type !== 'cron') return undefined
  const parsed = parseSchedule(spec.schedule)
  const now = options.ticks?.now()
  if (!('schedule' in parsed) || !options.ticks) return undefined
  if (now === undefined) throw new ClockUnreadError()
  const claimed = await claimTicks(
    options.ticks.redis,
    options.prefix,
    payload,
    String(queueJob.id),
    now,
    parsed.schedule,
  )
  const ticks = await unwrittenTicks(loaded, payload.tick, claimed, options)
  // In order; a tick whose run is final already (this queue job taken again) is left as it is.
  let outcome: RequestOutcome | undefined
  for (const tick of ticks)
    outcome = await runPushed(
      loaded,
      tickRunId(loaded.externalJobId, tick),
      tickBase(loaded, options.runs.chainId ?? 0, tick),
      { meta: { cron: { tick } } },
      `tick ${new Date(tick).toISOString()}`,
      options,
    )
  return outcome
}

/**
 * The claimed ticks the chain holds no write of. The claims live in Redis only, and Redis can lose
 * the last ones (a restart by SIGKILL, a failover to a replica, a flush) while their writes are on
 * chain: the next firing would then claim them again as missed. The pool is read for the ticks a
 * firing catches up only: the firing's own tick is read every period, and its write can be in the
 * pool only when this queue job was run before.
 */
async function unwrittenTicks(
  loaded: LoadedJob,
  ownTick: number,
  claimed: number[],
  options: PipelineWorkerOptions,
): Promise<number[]> {
  const chain = options.ticks?.chain
  if (!chain || claimed.length === 0) return claimed
  const written = await tickWritesOnChain(
    chain,
    tickTargets(loaded.job),
    claimed,
    claimed.filter((tick) => tick !== ownTick),
  )
  for (const write of written)
    options.logger.warn(
      { job: loaded.name, ...write, tickAt: new Date(write.tick).toISOString() },
      'a claimed cron tick is on chain already (Redis lost its claim, or its firing was taken again): not written again',
    )
  return claimed.filter((tick) => !written.some((write) => write.tick === tick))
}

function tickBase(loaded: LoadedJob, chainId: number, tick: number): Partial<RunRecord> {
  return {
    chainId,
    trigger: 'tick',
    tickAt: tick,
    job: loaded.name,
    externalJobId: loaded.externalJobId,
    operator: '',
    requester: '',
    payment: '0',
    blockNumber: 0,
    requestTxHash: '',
  }
}
