import { watch, type FSWatcher } from 'node:fs'
import { relative } from 'node:path'
import type { Logger } from '../config/logger.ts'
import { rootCauseFirst } from '../config/errors.ts'
import { jobsFolders } from '../config/jobs-folders.ts'
import { JobsDirError, type JobsChange, type LoadedJob } from './job-registry.ts'
import { formatProblem } from '../pipeline/index.ts'

/** What one reload did: the change it swapped in, or why it kept the jobs it had. */
export type JobsReload = { ok: true; change: JobsChange } | { ok: false; reason: string }

export interface JobsWatcher {
  /** Reloads now (SIGHUP, or a test); concurrent calls share one reload, a later one runs after. */
  reload(trigger: string): Promise<JobsReload>
  close(): void
}

export interface JobsWatchOptions {
  /** The jobs folder (JOBS_DIR), or several comma separated: each watched for `*.toml` files. */
  dir: string
  /** Loads the folder whole and swaps it in (throws JobsDirError, the old set staying, when it cannot). */
  reload: () => Promise<JobsChange>
  log: Logger
  /** Told after every reload: the reason it was refused, or undefined. */
  onReload?: (refused: string | undefined) => void
  /** Events within this long make one reload (an editor writes a file in several steps). */
  settleMs?: number
}

/**
 * Jobs that change while the runner runs: the folder is watched (and `reload` is what SIGHUP calls),
 * every change is validated whole and swapped in at once, each job added, changed or removed is one
 * log line, and a folder with a broken spec keeps the jobs it had, saying why in one line.
 */
export function watchJobsDir(options: JobsWatchOptions): JobsWatcher {
  const { log } = options
  const settleMs = options.settleMs ?? 200
  let timer: NodeJS.Timeout | undefined
  let closed = false

  let refusedBefore = false
  async function reloadOnce(trigger: string): Promise<JobsReload> {
    try {
      const change = await options.reload()
      for (const notice of change.notices) log.warn({ dir: options.dir, trigger }, notice)
      for (const loaded of change.added) log.info(fields(loaded, trigger), line('added', loaded))
      for (const loaded of change.changed)
        log.info(fields(loaded, trigger), line('changed', loaded))
      for (const loaded of change.removed)
        log.info(fields(loaded, trigger), line('removed', loaded))
      const changed = change.added.length + change.changed.length + change.removed.length > 0
      // A reload someone asked for, or one after a refusal, is answered even when nothing changed.
      if (!changed && (trigger === 'SIGHUP' || refusedBefore))
        log.info(
          { dir: options.dir, trigger },
          'job specs reloaded: every spec loads, no job changed',
        )
      refusedBefore = false
      options.onReload?.(undefined)
      return { ok: true, change }
    } catch (error) {
      const reason =
        error instanceof JobsDirError
          ? error.problems.map(formatProblem).join('; ')
          : rootCauseFirst(error)
      log.error(
        { dir: options.dir, trigger },
        `job specs not reloaded, the jobs loaded before still run: ${reason}`,
      )
      refusedBefore = true
      options.onReload?.(reason)
      return { ok: false, reason }
    }
  }

  // One reload at a time; calls while one runs share the one queued after it, which reads the folder
  // as it is then.
  let last: Promise<unknown> = Promise.resolve()
  let queued: Promise<JobsReload> | undefined
  function reload(trigger: string): Promise<JobsReload> {
    queued ??= last.then(() => {
      queued = undefined
      return reloadOnce(trigger)
    })
    last = queued
    return queued
  }

  const onChange = () => {
    if (closed) return
    clearTimeout(timer)
    timer = setTimeout(() => void reload('JOBS_DIR changed'), settleMs)
  }
  const watchers = jobsFolders(options.dir).map((folder) => watchSpecs(folder, log, onChange))

  return {
    reload,
    close() {
      closed = true
      clearTimeout(timer)
      for (const watcher of watchers) watcher?.close()
    },
  }
}

/**
 * Calls `onChange` at every change of a `.toml` file in `dir`. A folder that cannot be watched (or
 * stops being watched) is said in one line: SIGHUP still reloads it.
 */
function watchSpecs(dir: string, log: Logger, onChange: () => void): FSWatcher | undefined {
  try {
    const watcher = watch(dir, (_event, file) => {
      if (file === null || String(file).endsWith('.toml')) onChange()
    })
    watcher.on('error', (error) =>
      log.warn(
        { dir, err: error.message },
        'JOBS_DIR is no longer watched: send SIGHUP to reload it',
      ),
    )
    return watcher
  } catch (error) {
    log.warn(
      { dir, err: (error as Error).message },
      'JOBS_DIR cannot be watched: send SIGHUP to reload it',
    )
    return undefined
  }
}

function line(what: 'added' | 'changed' | 'removed', loaded: LoadedJob): string {
  const file = relative(process.cwd(), loaded.job.file) || loaded.job.file
  return `job ${what}: ${loaded.name} (externalJobID ${loaded.externalJobId}, ${file}${what === 'removed' ? '' : loaded.job.spec.type === 'directrequest' ? `, Operator ${loaded.job.spec.contractAddress}` : `, ${loaded.job.spec.type}`})`
}

function fields(loaded: LoadedJob, trigger: string): Record<string, unknown> {
  return { job: loaded.name, externalJobId: loaded.externalJobId, trigger }
}
