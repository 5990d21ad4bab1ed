import { FeedrunnerError } from '../config/errors.ts'
import { endpointOf } from '../config/settings.ts'
import { parseDuration } from '../pipeline/duration.ts'
import { connectClient } from '../queue/connection.ts'
import { RUN_TRIGGERS, type RunTrigger } from '../pipeline/job-spec/run-trigger.ts'
import { RUN_STATES, RunStore, type RunRecord, type RunState } from '../runner/run-record.ts'
import { withDevStack } from './dev-state.ts'
import { settingsOrExit } from './lifecycle.ts'
import { renderTable } from './table.ts'

export interface RunsListOptions {
  state?: string
  trigger?: string
  job?: string
  since?: string
  requester?: string
  limit: string
  json?: boolean
}

interface RunFilter {
  state?: RunState
  trigger?: RunTrigger
  job?: string
  sinceMs: number
  requester?: string
  limit: number
}

/** How many leading characters of a request id the table shows; `runs show` takes any unique start. */
const SHOWN_ID_CHARS = 12
/** The widest reason the table shows; `runs show <id>` says it whole. */
const SHOWN_REASON_CHARS = 100
/** The run index holds the newest 10,000 runs (run-record.ts): a page of them at a time. */
const PAGE = 500

/**
 * `feedrunner runs list`: the runs of this installation (REDIS_URL, QUEUE_PREFIX; the dev stack of
 * this checkout when they are not set), newest first, filtered by state, trigger, job, age and
 * requester (a cron job ticking every few seconds fills the newest runs: `--trigger request`).
 */
export async function runsListAction(options: RunsListOptions): Promise<void> {
  const settings = settingsOrExit(withDevStack().env)
  const redis = await connectClient(settings.REDIS_URL).catch((error: unknown) => {
    console.error(
      `cannot read runs: Redis at REDIS_URL ${endpointOf(settings.REDIS_URL)} does not answer (${(error as Error).message})`,
    )
    process.exit(1)
  })
  try {
    // Ages go by Redis's clock, which stamped the runs (update-run.lua).
    const [seconds, micros] = await redis.time()
    const filter = runFilter(options, Number(seconds) * 1000 + Math.floor(Number(micros) / 1000))
    const runs = await findRuns(new RunStore(redis, `${settings.QUEUE_PREFIX}:runner`), filter)
    if (options.json) console.log(JSON.stringify(runs, null, 2))
    else
      console.log(
        runs.length === 0
          ? `no run matches under queue prefix ${settings.QUEUE_PREFIX}`
          : renderTable(
              ['run', 'trigger', 'chain', 'job', 'state', 'received', 'requester', 'reason'],
              runs.map(runRow),
            ),
      )
  } catch (error) {
    console.error(error instanceof FeedrunnerError ? error.message : String(error))
    process.exitCode = 1
  } finally {
    redis.disconnect()
  }
}

async function findRuns(store: RunStore, filter: RunFilter): Promise<RunRecord[]> {
  const found: RunRecord[] = []
  for await (const page of store.pagesSince(filter.sinceMs, PAGE)) {
    for (const run of page) {
      if (matches(run, filter)) found.push(run)
      if (found.length >= filter.limit) return found
    }
  }
  return found
}

function matches(run: RunRecord, filter: RunFilter): boolean {
  if (filter.state && run.state !== filter.state) return false
  // A record of a release before push jobs names no trigger: it is a request's.
  if (filter.trigger && (run.trigger ?? 'request') !== filter.trigger) return false
  if (filter.requester && run.requester?.toLowerCase() !== filter.requester) return false
  if (filter.job) {
    const job = filter.job
    if (!run.job.toLowerCase().includes(job) && run.externalJobId.toLowerCase() !== job)
      return false
  }
  return true
}

/** The options as a filter; a value that is not one is refused, naming the option and what it takes. */
function runFilter(options: RunsListOptions, nowMs: number): RunFilter {
  const refuse = (message: string): never => {
    throw new FeedrunnerError(message, { kind: 'bad_input' })
  }
  const limit = Number(options.limit)
  if (!Number.isInteger(limit) || limit < 1) refuse(`--limit ${options.limit}: expected 1 or more`)
  if (options.state !== undefined && !(RUN_STATES as readonly string[]).includes(options.state))
    refuse(`--state ${options.state}: expected one of ${RUN_STATES.join(', ')}`)
  if (
    options.trigger !== undefined &&
    !(RUN_TRIGGERS as readonly string[]).includes(options.trigger)
  )
    refuse(`--trigger ${options.trigger}: expected one of ${RUN_TRIGGERS.join(', ')}`)
  // Compared in lower case, so a checksum's letters say nothing here (ethers is not loaded for them).
  if (options.requester !== undefined && !/^0x[0-9a-fA-F]{40}$/.test(options.requester))
    refuse(`--requester ${options.requester}: expected an address (0x and 40 hex digits)`)
  return {
    ...(options.state ? { state: options.state as RunState } : {}),
    ...(options.trigger ? { trigger: options.trigger as RunTrigger } : {}),
    ...(options.job ? { job: options.job.toLowerCase() } : {}),
    ...(options.requester ? { requester: options.requester.toLowerCase() } : {}),
    sinceMs: options.since === undefined ? 0 : sinceOf(options.since, nowMs, refuse),
    limit,
  }
}

/** `--since`: an age (`30m`, `6h`, `2d`) before now, or a date and time (`2026-01-31T12:00Z`). */
function sinceOf(text: string, nowMs: number, refuse: (message: string) => never): number {
  const days = /^(\d+(?:\.\d+)?)d$/.exec(text.trim())
  const age = days ? Number(days[1]) * 86_400_000 : parseDuration(text)
  if (age !== undefined) return nowMs - age
  const at = Date.parse(text)
  return Number.isNaN(at)
    ? refuse(
        `--since ${text}: expected an age (30m, 6h, 2d) or a date and time (2026-01-31T12:00Z)`,
      )
    : at
}

function runRow(run: RunRecord): string[] {
  const received = run.times.received
  return [
    run.requestId.slice(0, SHOWN_ID_CHARS),
    run.trigger ?? 'request',
    String(run.chainId),
    run.job,
    run.quarantined ? `${run.state} (quarantined)` : run.state,
    received === undefined ? '' : new Date(received).toISOString(),
    run.requester ?? '',
    shortened(run.reason ?? ''),
  ]
}

function shortened(text: string): string {
  return text.length > SHOWN_REASON_CHARS ? `${text.slice(0, SHOWN_REASON_CHARS)}…` : text
}
