import { endpointOf } from '../config/settings.ts'
import { connectClient } from '../queue/connection.ts'
import { scanKeys } from '../queue/scan-keys.ts'
import { readLoadedJobs, type LoadedJobs } from '../runner/loaded-jobs.ts'
import { withDevStack } from './dev-state.ts'
import { settingsOrExit } from './lifecycle.ts'
import { renderTable } from './table.ts'

/** What the runners of one chain serve now, as they last said it (every 20 s, and on every change). */
export type ServedChain = { chainId: number } & LoadedJobs

/**
 * `feedrunner jobs list --running`: the jobs the running runners of this installation (REDIS_URL and
 * QUEUE_PREFIX, or the dev stack of this checkout) have loaded, per chain, which is what they serve:
 * a spec added to JOBS_DIR that a runner refused is not among them, and the reason is said.
 */
export async function runningJobsAction(options: { json?: boolean }): Promise<number> {
  const settings = settingsOrExit(withDevStack().env)
  const redis = await connectClient(settings.REDIS_URL).catch((error: unknown) => {
    console.error(
      `cannot read the running jobs: Redis at REDIS_URL ${endpointOf(settings.REDIS_URL)} does not answer (${(error as Error).message})`,
    )
    return undefined
  })
  if (!redis) return 1
  try {
    const prefix = settings.QUEUE_PREFIX
    const entries = await scanKeys(redis, `${prefix}:runner:loaded-jobs:*`)
    const chains: ServedChain[] = []
    for (const chainId of entries
      .map((key) => Number(key.split(':').at(-1)))
      .sort((a, b) => a - b)) {
      const served = await readLoadedJobs(redis, prefix, chainId)
      if (served) chains.push({ chainId, ...served })
    }
    if (options.json) console.log(JSON.stringify(chains, null, 2))
    else console.log(runningTable(chains, prefix))
    return 0
  } finally {
    redis.disconnect()
  }
}

function runningTable(chains: readonly ServedChain[], prefix: string): string {
  if (chains.length === 0)
    return `no runner serves jobs under queue prefix ${prefix} (none runs, or none has said so in the last minute)`
  const refused = chains.flatMap((chain) =>
    chain.refused
      ? [
          `the runners of chain ${chain.chainId} refused the last change of the jobs folder and run the jobs above: ${chain.refused}`,
        ]
      : [],
  )
  return [
    renderTable(
      ['chain', 'job', 'externalJobID', 'file'],
      chains.flatMap((chain) =>
        chain.jobs.map((job) => [String(chain.chainId), job.name, job.externalJobId, job.file]),
      ),
    ),
    ...refused,
  ].join('\n')
}
