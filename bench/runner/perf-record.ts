/**
 * BENCH_PERF=<part>[,<part>...]: a Linux `perf` recording of every process whose name starts with one
 * of them (`runner`, `adapter`, `worker`, `bare`), from the moment it is ready until it exits, for
 * `npm run bench:perf-shares` (`perf-shares.ts`). `-e cpu-clock` samples a thread only while it runs,
 * so the recording is the process's CPU time on all its threads; node's `--perf-basic-prof` names the
 * JavaScript functions in it. Recording costs the process some CPU: leave it off when comparing CPU.
 */
import { mkdirSync, readdirSync, readlinkSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { startOwnedProcess, waitFor, type OwnedProcess } from '../../src/dev/process.ts'
import { PERF } from './settings.ts'

const RECORDINGS_DIR = join(tmpdir(), 'feedrunner-bench-profiles')
/** Samples a second per thread: 2 kHz keeps a 1,000-request phase's recording at a few MB. */
const SAMPLE_HZ = 1999

interface Recording {
  file: string
  perf: OwnedProcess
}
const recordings: Recording[] = []

/** Whether the process named `name` is recorded. */
function recordsPerf(name: string): boolean {
  return PERF.some((part) => name.startsWith(part))
}

/**
 * Node flags a recorded process needs (its JavaScript functions named in `/tmp/perf-<pid>.map`).
 * `--perf-basic-prof` also turns on V8's own log, one file per isolate in the process's working
 * directory (the checkout): it goes beside the recordings instead, one file per process.
 */
export function perfNodeArgs(name: string): string[] {
  if (!recordsPerf(name)) return []
  mkdirSync(RECORDINGS_DIR, { recursive: true })
  return [
    '--perf-basic-prof',
    '--no-logfile-per-isolate',
    `--logfile=${join(RECORDINGS_DIR, 'v8-%p.log')}`,
  ]
}

/** How the label of a warm phase's process ends (phases/warm-up.ts). */
export const WARM_LABEL_END = ', warm'

/**
 * When BENCH_PERF names it, starts recording process `pid` (named `name`) and resolves once perf is
 * attached to it; otherwise does nothing. A warm phase's process is recorded from the end of its
 * warm-up (`afterWarmUp`), so its recording is the measured burst's alone.
 */
export async function recordPerf(
  name: string,
  pid: number,
  { afterWarmUp = false }: { afterWarmUp?: boolean } = {},
): Promise<void> {
  if (!recordsPerf(name) || name.endsWith(WARM_LABEL_END) !== afterWarmUp) return
  // perf writes into the folder, and does not make it (a fresh machine has none).
  mkdirSync(RECORDINGS_DIR, { recursive: true })
  const file = join(RECORDINGS_DIR, `perf-${name.replace(/\W+/g, '-')}-${pid}.data`)
  let perf: OwnedProcess
  try {
    perf = startOwnedProcess(
      `perf record of the ${name}`,
      'perf',
      ['record', '-e', 'cpu-clock', '-F', String(SAMPLE_HZ), '-g', '-p', String(pid), '-o', file],
      { stopGraceMs: 30_000 },
    )
  } catch (error) {
    throw new Error('BENCH_PERF needs perf (Debian: apt-get install linux-perf)', { cause: error })
  }
  try {
    // A hang bound only: perf opens one event per thread of the process within a second.
    await waitFor(
      `perf to attach to the ${name} (pid ${pid})`,
      async () => {
        if (perf.child.exitCode !== null || perf.child.pid === undefined) return true
        return perfEventsOpen(perf.child.pid) > 0
      },
      30_000,
    )
  } catch (error) {
    await perf.stop()
    throw error
  }
  if (perf.child.exitCode !== null)
    throw new Error(
      `BENCH_PERF: perf could not record the ${name} (is linux-perf installed, and may this user trace it? /proc/sys/kernel/perf_event_paranoid): ${perf.output().trim()}`,
    )
  recordings.push({ file, perf })
}

/** How many perf events process `pid` holds open. */
function perfEventsOpen(pid: number): number {
  try {
    return readdirSync(`/proc/${pid}/fd`).filter((fd) => {
      try {
        return readlinkSync(`/proc/${pid}/fd/${fd}`).includes('perf_event')
      } catch {
        return false
      }
    }).length
  } catch {
    return 0
  }
}

/**
 * Waits for every recording to be written (perf ends when the process it records ends; the bench
 * stops every process it started before it calls this) and returns their files.
 */
export async function finishPerfRecordings(): Promise<string[]> {
  const files: string[] = []
  for (const { file, perf } of recordings.splice(0)) {
    // SIGINT is how perf record is told to write what it has and end, if its process is still up.
    if (perf.child.exitCode === null) await perf.stop('SIGINT')
    files.push(file)
  }
  return files
}
