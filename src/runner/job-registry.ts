import { readdir } from 'node:fs/promises'
import { join, resolve } from 'node:path'
import type { JobChainDefaults } from '../config/chains.ts'
import { FeedrunnerError } from '../config/errors.ts'
import { jobsFolders } from '../config/jobs-folders.ts'
import { specIdsOfJob } from '../chain/operator.ts'
import {
  duplicateJobIdProblems,
  formatProblem,
  loadJobSpecFile,
  type Job,
  type JobSpec,
  type SpecProblem,
} from '../pipeline/index.ts'
import { chooseChain } from './chain-choice.ts'
import { chainFitProblems } from './chain-fit.ts'

/** A job spec the runner serves, with the spec ids a request may carry for it. */
export interface LoadedJob {
  readonly job: Job
  readonly name: string
  readonly externalJobId: string
  readonly specIds: readonly string[]
}

/** What one swap of the registry's jobs changed, by externalJobID. */
export interface JobsChange {
  added: LoadedJob[]
  changed: LoadedJob[]
  removed: LoadedJob[]
  /** What the runner says about the new set that it did not say of the old (a spec left out). */
  notices: string[]
}

interface Snapshot {
  jobs: readonly LoadedJob[]
  notices: readonly string[]
  bySpec: ReadonlyMap<string, LoadedJob>
  /** What tells a changed spec from the same one loaded again, by externalJobID. */
  fingerprints: ReadonlyMap<string, string>
}

function snapshotOf(jobs: readonly LoadedJob[], notices: readonly string[]): Snapshot {
  const bySpec = new Map<string, LoadedJob>()
  // Only a directrequest job answers an OracleRequest: a cron or webhook job's id is no spec id.
  for (const loaded of jobs)
    if (loaded.job.spec.type === 'directrequest')
      for (const specId of loaded.specIds) bySpec.set(specId, loaded)
  const fingerprints = new Map(jobs.map((loaded) => [loaded.externalJobId, fingerprint(loaded)]))
  return { jobs, notices, bySpec, fingerprints }
}

function fingerprint(loaded: LoadedJob): string {
  const { file, spec, tasks } = loaded.job
  return JSON.stringify({ file, spec, tasks }, (_key, value: unknown) =>
    typeof value === 'bigint' ? value.toString() : value,
  )
}

/**
 * The job specs of `JOBS_DIR`, looked up by the spec id of an `OracleRequest` log. The set is live:
 * `replace` swaps it at once for one that was validated whole (a reload of the folder), and whoever
 * reads it (the runner by `bySpecId`, `operators()`, `specFilters()` and `jobs`; the listener, which
 * subscribes with `onChange`) sees the old set or the new one, never a mix.
 */
export class JobRegistry {
  private snapshot: Snapshot
  /** One array for the registry's life, refilled on a swap: holders of `operators()` see the new list. */
  private readonly operatorList: string[] = []
  private readonly listeners = new Set<(change: JobsChange) => void>()

  /**
   * @param notices what the runner says once at start about these jobs (a spec without evmChainID
   * put on the one chain it serves).
   */
  constructor(jobs: readonly LoadedJob[], notices: readonly string[] = []) {
    this.snapshot = snapshotOf(jobs, notices)
    this.refillOperators()
  }

  get jobs(): readonly LoadedJob[] {
    return this.snapshot.jobs
  }

  get notices(): readonly string[] {
    return this.snapshot.notices
  }

  bySpecId(specId: string): LoadedJob | undefined {
    return this.snapshot.bySpec.get(specId.toLowerCase())
  }

  byName(name: string): LoadedJob | undefined {
    return this.jobs.find((loaded) => loaded.name === name || loaded.externalJobId === name)
  }

  /**
   * The jobs of one chain (each loaded job names its chain once the registry was loaded for chains),
   * following this registry: a swap here swaps the chain's jobs too.
   */
  forChain(chainId: number): JobRegistry {
    const ofChain = (jobs: readonly LoadedJob[]) =>
      jobs.filter((loaded) => loaded.job.spec.evmChainID === BigInt(chainId))
    const chain = new JobRegistry(ofChain(this.jobs), this.notices)
    this.onChange(() => chain.replace(ofChain(this.jobs), this.notices))
    return chain
  }

  /**
   * The Operator contracts the loaded jobs name, checksummed and without duplicates. The array is the
   * registry's own and follows a swap (recovery and the reconciler read it at each pass).
   */
  operators(): string[] {
    return this.operatorList
  }

  /** What the listener filters by: every spec id with its job's confirmation depth. */
  specFilters(): Map<string, { minConfirmations: number }> {
    const filters = new Map<string, { minConfirmations: number }>()
    for (const loaded of this.jobs) {
      if (loaded.job.spec.type !== 'directrequest') continue
      const minConfirmations = Math.max(1, loaded.job.spec.minIncomingConfirmations ?? 1)
      for (const specId of loaded.specIds) filters.set(specId, { minConfirmations })
    }
    return filters
  }

  /**
   * Swaps in `jobs` (already validated as a whole) and tells the subscribers what changed; a swap
   * that changes nothing tells no one. Answers the change.
   */
  replace(jobs: readonly LoadedJob[], notices: readonly string[] = this.notices): JobsChange {
    const before = this.snapshot
    const after = snapshotOf(jobs, notices)
    const change: JobsChange = {
      added: [],
      changed: [],
      removed: [],
      notices: notices.filter((notice) => !before.notices.includes(notice)),
    }
    for (const loaded of jobs) {
      const was = before.fingerprints.get(loaded.externalJobId)
      if (was === undefined) change.added.push(loaded)
      else if (was !== after.fingerprints.get(loaded.externalJobId)) change.changed.push(loaded)
    }
    for (const loaded of before.jobs)
      if (!after.fingerprints.has(loaded.externalJobId)) change.removed.push(loaded)
    this.snapshot = after
    this.refillOperators()
    if (change.added.length + change.changed.length + change.removed.length > 0)
      for (const listener of this.listeners) listener(change)
    return change
  }

  /** Calls `listener` after every swap that changed something; answers how to unsubscribe. */
  onChange(listener: (change: JobsChange) => void): () => void {
    this.listeners.add(listener)
    return () => this.listeners.delete(listener)
  }

  private refillOperators(): void {
    const operators = [
      ...new Set(
        this.jobs.flatMap(({ job }) =>
          job.spec.type === 'directrequest' ? [job.spec.contractAddress] : [],
        ),
      ),
    ]
    this.operatorList.splice(0, this.operatorList.length, ...operators)
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
export class JobsDirError extends FeedrunnerError {
  override readonly name = 'JobsDirError'
  constructor(readonly problems: readonly SpecProblem[]) {
    super(`Job specs have problems:\n  ${problems.map(formatProblem).join('\n  ')}`, {
      kind: 'config',
    })
  }
}

/**
 * Loads every `*.toml` in `dir` (a folder, or several separated by commas: JOBS_DIR) for the
 * chains `chainIds` names. A spec for another chain is left out with a notice (one line: the runner
 * that serves its chain runs it; several runners may share one folder); a spec without evmChainID runs on the only chain, or is refused when there are several; two
 * specs with one externalJobID are refused, since a request could not tell them apart. Only a spec
 * that no runner could run (it does not load) or that this runner's chain cannot run refuses the
 * folder. Without `chainIds`, every valid spec is loaded as it is.
 */
export async function loadJobRegistry(
  dir: string,
  chainIds?: number | readonly number[],
  options: {
    /** The chain's defaults every job of it takes (settings, CHAINS_FILE): see withChainDefaults. */
    defaultsFor?: (chainId: number) => JobChainDefaults
    /** Refuse a job its chain cannot run as it says (chain-fit.ts): the runner's start does. */
    refuseMisfits?: boolean
  } = {},
): Promise<JobRegistry> {
  const { jobs, notices, problems } = await readJobsDir(dir, chainIds, options)
  if (problems.length > 0) throw new JobsDirError(problems)
  return new JobRegistry(jobs.map(registerJob), notices)
}

/**
 * The specs of `dir` that load, and the problems of those that do not, without refusing the folder:
 * for a command that asks about one job (`request`), where another spec's problem is a warning.
 * Specs that share an externalJobID are all left out.
 */
export async function loadValidJobs(
  dir: string,
  chainIds?: number | readonly number[],
  options: { defaultsFor?: (chainId: number) => JobChainDefaults } = {},
): Promise<{ registry: JobRegistry; problems: SpecProblem[] }> {
  const { jobs, notices, problems } = await readJobsDir(dir, chainIds, options)
  const shared = new Set(problems.map((problem) => problem.file))
  const valid = jobs.filter((job) => !shared.has(job.file))
  return { registry: new JobRegistry(valid.map(registerJob), notices), problems }
}

async function readJobsDir(
  dir: string,
  chainIds: number | readonly number[] | undefined,
  options: {
    defaultsFor?: (chainId: number) => JobChainDefaults
    refuseMisfits?: boolean
  } = {},
): Promise<{ jobs: Job[]; notices: string[]; problems: SpecProblem[] }> {
  const files = (
    await Promise.all(
      jobsFolders(dir).map(async (folder) => {
        const root = resolve(folder)
        const names = (await readdir(root)).filter((file) => file.endsWith('.toml')).sort()
        return names.map((name) => join(root, name))
      }),
    )
  ).flat()
  const configured = chainIds === undefined ? undefined : [chainIds].flat()
  const problems: SpecProblem[] = []
  const notices: string[] = []
  const jobs: Job[] = []
  for (const path of files) {
    const { job, problems: fileProblems } = await loadJobSpecFile(path)
    problems.push(...fileProblems)
    if (!job) continue
    if (configured === undefined) {
      jobs.push(job)
      continue
    }
    const choice = chooseChain(job.spec, configured)
    if (choice.kind === 'refuse')
      problems.push({ file: path, field: 'evmChainID', message: choice.message })
    if (choice.kind === 'other-chain')
      notices.push(
        `${path}: job ${JSON.stringify(job.spec.name)} runs on chain ${String(job.spec.evmChainID)}, which this runner does not serve (configured chains: ${configured.join(', ') || 'none'}): left out, for the runner that serves it (declare the chain in CHAINS_FILE for this one to)`,
      )
    if (choice.kind !== 'serve') continue
    if (choice.notice) notices.push(`${path}: ${choice.notice}`)
    // The chain is part of the job from here on: $(jobSpec.evmChainID) reads it.
    const spec = { ...job.spec, evmChainID: BigInt(choice.chainId) }
    const defaults = options.defaultsFor?.(choice.chainId)
    for (const problem of defaults && options.refuseMisfits ? chainFitProblems(job, defaults) : [])
      problems.push({
        file: path,
        field: problem.task ? undefined : 'forwardingAllowed',
        ...problem,
      })
    jobs.push({ ...job, spec: defaults ? withChainDefaults(spec, defaults) : spec })
  }
  problems.push(...duplicateJobIdProblems(jobs))
  return { jobs, notices, problems }
}

/**
 * A job as its chain runs it, as a Chainlink node's directrequest delegate combines them: it waits for
 * the greater of its own and the chain's minIncomingConfirmations, and a request must pay its
 * minContractPaymentLinkJuels, or the chain's minimum when it sets none.
 */
export function withChainDefaults<Spec extends JobSpec>(
  spec: Spec,
  defaults: JobChainDefaults,
): Spec {
  if (spec.type !== 'directrequest') return spec
  return {
    ...spec,
    minIncomingConfirmations: Math.max(
      spec.minIncomingConfirmations ?? 0,
      defaults.minIncomingConfirmations,
    ),
    minContractPaymentLinkJuels:
      spec.minContractPaymentLinkJuels ?? defaults.minContractPaymentLinkJuels,
  }
}
