import { readdir } from 'node:fs/promises'
import { join, resolve } from 'node:path'
import { specIdsOfJob } from '../chain/operator.ts'
import { formatProblem, loadJobSpecFile, type Job, type SpecProblem } from '../pipeline/index.ts'

/** A job spec the runner serves, with the spec ids a request may carry for it. */
export interface LoadedJob {
  readonly job: Job
  readonly name: string
  readonly externalJobId: string
  readonly specIds: readonly string[]
}

/** The job specs of `JOBS_DIR`, looked up by the spec id of an `OracleRequest` log. */
export class JobRegistry {
  private readonly bySpec = new Map<string, LoadedJob>()

  constructor(readonly jobs: readonly LoadedJob[]) {
    for (const loaded of jobs) for (const specId of loaded.specIds) this.bySpec.set(specId, loaded)
  }

  bySpecId(specId: string): LoadedJob | undefined {
    return this.bySpec.get(specId.toLowerCase())
  }

  byName(name: string): LoadedJob | undefined {
    return this.jobs.find((loaded) => loaded.name === name || loaded.externalJobId === name)
  }

  /** The Operator contracts the loaded jobs name, checksummed and without duplicates. */
  operators(): string[] {
    return [...new Set(this.jobs.map((loaded) => loaded.job.spec.contractAddress))]
  }

  /** What the listener filters by: every spec id with its job's confirmation depth. */
  specFilters(): Map<string, { minConfirmations: number }> {
    const filters = new Map<string, { minConfirmations: number }>()
    for (const loaded of this.jobs) {
      const minConfirmations = Math.max(1, loaded.job.spec.minIncomingConfirmations ?? 1)
      for (const specId of loaded.specIds) filters.set(specId, { minConfirmations })
    }
    return filters
  }
}

export function registerJob(job: Job): LoadedJob {
  const externalJobId = job.spec.externalJobID.toLowerCase()
  return {
    job,
    name: job.spec.name,
    externalJobId,
    specIds: specIdsOfJob(externalJobId).map((id) => id.toLowerCase()),
  }
}

/** Thrown when any spec in the directory is broken: the runner never starts with half its jobs. */
export class JobsDirError extends Error {
  override readonly name = 'JobsDirError'
  constructor(readonly problems: readonly SpecProblem[]) {
    super(`Job specs have problems:\n  ${problems.map(formatProblem).join('\n  ')}`)
  }
}

/**
 * Loads every `*.toml` in `dir` for the chain `chainId`. Specs for other chains are left out; two
 * specs with one externalJobID are refused, since a request could not tell them apart.
 */
export async function loadJobRegistry(dir: string, chainId?: number): Promise<JobRegistry> {
  const root = resolve(dir)
  const files = (await readdir(root)).filter((file) => file.endsWith('.toml')).sort()
  const problems: SpecProblem[] = []
  const jobs: LoadedJob[] = []
  const seen = new Map<string, string>()
  for (const file of files) {
    const path = join(root, file)
    const { job, problems: fileProblems } = await loadJobSpecFile(path)
    problems.push(...fileProblems)
    if (!job) continue
    if (chainId !== undefined && job.spec.evmChainID !== BigInt(chainId)) continue
    const loaded = registerJob(job)
    const twin = seen.get(loaded.externalJobId)
    if (twin) {
      problems.push({
        file: path,
        message: `externalJobID ${loaded.externalJobId} is also used by ${twin}`,
      })
      continue
    }
    seen.set(loaded.externalJobId, path)
    jobs.push(loaded)
  }
  if (problems.length > 0) throw new JobsDirError(problems)
  return new JobRegistry(jobs)
}
