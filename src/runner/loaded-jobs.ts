import type { Redis } from 'ioredis'
import { z } from 'zod'
import type { JobRegistry } from './job-registry.ts'

/**
 * What the running runners have loaded, per chain, for the commands of another process: `request`
 * says at once that the stack does not serve a job (and why, when its last reload was refused)
 * instead of waiting for a fulfilment that cannot come. Job names and files only, never a key.
 * Each runner rewrites its chain's entry on every change and every REFRESH_MS; an entry lives
 * ENTRY_TTL_MS, so one whose runners stopped goes by itself.
 */

const REFRESH_MS = 20_000
const ENTRY_TTL_MS = 60_000

const loadedJobsSchema = z.object({
  at: z.number(),
  jobs: z.array(z.object({ name: z.string(), externalJobId: z.string(), file: z.string() })),
  /** Why the last reload of the jobs folder was refused (the jobs above still run). */
  refused: z.string().optional(),
})
export type LoadedJobs = z.infer<typeof loadedJobsSchema>

function entryKey(prefix: string, chainId: number): string {
  return `${prefix}:runner:loaded-jobs:${chainId}`
}

/** The loaded jobs of `chainId` as its runners last wrote them, or undefined when none runs. */
export async function readLoadedJobs(
  redis: Redis,
  prefix: string,
  chainId: number,
): Promise<LoadedJobs | undefined> {
  const stored = await redis.get(entryKey(prefix, chainId))
  if (stored === null) return undefined
  try {
    const parsed = loadedJobsSchema.safeParse(JSON.parse(stored))
    return parsed.success ? parsed.data : undefined
  } catch {
    return undefined
  }
}

/**
 * Keeps the entries of `chains` current: now, on every change of their registries, on `refused`,
 * and every REFRESH_MS. A write that fails (Redis away) is tried again at the next refresh; Redis's
 * outage is reported by its connection. Answers how to stop.
 */
export function publishLoadedJobs(
  redis: Redis,
  prefix: string,
  chains: ReadonlyMap<number, JobRegistry>,
): { refused(reason: string | undefined): void; stop(): void } {
  let refused: string | undefined
  const write = () => {
    const writes = redis.pipeline()
    for (const [chainId, registry] of chains) {
      const entry: LoadedJobs = {
        at: Date.now(),
        jobs: registry.jobs.map((loaded) => ({
          name: loaded.name,
          externalJobId: loaded.externalJobId,
          file: loaded.job.file,
        })),
        ...(refused ? { refused } : {}),
      }
      writes.set(entryKey(prefix, chainId), JSON.stringify(entry), 'PX', ENTRY_TTL_MS)
    }
    void writes.exec().catch(() => undefined)
  }
  const unsubscribe = [...chains.values()].map((registry) => registry.onChange(write))
  const timer = setInterval(write, REFRESH_MS)
  timer.unref()
  write()
  return {
    refused(reason) {
      refused = reason
      write()
    },
    stop() {
      clearInterval(timer)
      for (const stop of unsubscribe) stop()
    },
  }
}
