import { statSync } from 'node:fs'
import type { Redis } from 'ioredis'
import { FeedrunnerError } from '../config/errors.ts'
import type { LoadedJob } from '../runner/job-registry.ts'
import { readLoadedJobs, type LoadedJobs } from '../runner/loaded-jobs.ts'

/** How long `request` waits for a runner to load a spec that changed just before (its watch settles). */
const RELOAD_WAIT_MS = 3_000

/**
 * Refuses, at once and saying why, a request for a job the running runners of this queue prefix and
 * chain do not serve: a spec added to JOBS_DIR that a runner refused (broken, or for an Operator it
 * cannot use), or one it has not loaded. A spec written in the last moments is given the time its
 * watch takes. Without a published entry (no runner runs here) it says so on stderr and goes on.
 */
export async function checkServed(
  redis: Redis,
  prefix: string,
  chainId: number,
  job: LoadedJob,
): Promise<void> {
  const modified = modifiedAt(job.job.file)
  let served = await readLoadedJobs(redis, prefix, chainId).catch(() => undefined)
  for (
    const until = Date.now() + RELOAD_WAIT_MS;
    served && !serves(served, job) && served.at < modified && Date.now() < until;
  ) {
    await new Promise((resolveWait) => setTimeout(resolveWait, 200))
    served = await readLoadedJobs(redis, prefix, chainId).catch(() => served)
  }
  if (!served) {
    console.error(
      `no runner on queue prefix ${prefix} says which jobs it serves on chain ${chainId} (is one running?): sending anyway`,
    )
    return
  }
  if (serves(served, job)) return
  const why = served.refused
    ? `its last reload of the jobs folder was refused, so it runs the jobs it had: ${served.refused}`
    : `it serves ${served.jobs.map((loaded) => loaded.name).join(', ') || 'no job'}`
  throw new FeedrunnerError(
    `the running feedrunner (queue prefix ${prefix}, chain ${chainId}) does not serve job ${job.name} (externalJobID ${job.externalJobId}, ${job.job.file}): ${why}. Nothing was sent.`,
    { kind: 'config' },
  )
}

function serves(served: LoadedJobs, job: LoadedJob): boolean {
  return served.jobs.some((loaded) => loaded.externalJobId === job.externalJobId)
}

function modifiedAt(file: string): number {
  try {
    return statSync(file).mtimeMs
  } catch {
    return 0
  }
}
