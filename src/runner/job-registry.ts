import { readdir } from 'node:fs/promises'
import { join, resolve } from 'node:path'
import type { JobChainDefaults } from '../config/chains.ts'
import { FeedrunnerError } from '../config/errors.ts'
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

/** The job specs of `JOBS_DIR`, looked up by the spec id of an `OracleRequest` log. */
export class JobRegistry {
  private readonly bySpec = new Map<string, LoadedJob>()

  /**
   * @param notices what the runner says once at start about these jobs (a spec without evmChainID
   * put on the one chain it serves).
   */
  constructor(
    readonly jobs: readonly LoadedJob[],
    readonly notices: readonly string[] = [],
  ) {
    for (const loaded of jobs) for (const specId of loaded.specIds) this.bySpec.set(specId, loaded)
  }

  bySpecId(specId: string): LoadedJob | undefined {
    return this.bySpec.get(specId.toLowerCase())
  }

  byName(name: string): LoadedJob | undefined {
    return this.jobs.find((loaded) => loaded.name === name || loaded.externalJobId === name)
  }

  /** The jobs of one chain (each loaded job names its chain once the registry was loaded for chains). */
  forChain(chainId: number): JobRegistry {
    return new JobRegistry(
      this.jobs.filter((loaded) => loaded.job.spec.evmChainID === BigInt(chainId)),
      this.notices,
    )
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
export class JobsDirError extends FeedrunnerError {
  override readonly name = 'JobsDirError'
  constructor(readonly problems: readonly SpecProblem[]) {
    super(`Job specs have problems:\n  ${problems.map(formatProblem).join('\n  ')}`, {
      kind: 'config',
    })
  }
}

/**
 * Loads every `*.toml` in `dir` for the chains `chainIds` names. Specs for other chains are left out
 * (refused with `refuseOtherChains`: a runner starting with a spec for a chain it does not serve
 * stops); a spec without evmChainID runs on the only chain, or is refused when there are several; two
 * specs with one externalJobID are refused, since a request could not tell them apart. Without
 * `chainIds`, every valid spec is loaded as it is.
 */
export async function loadJobRegistry(
  dir: string,
  chainIds?: number | readonly number[],
  options: {
    refuseOtherChains?: boolean
    /** The chain's defaults every job of it takes (settings, CHAINS_FILE): see withChainDefaults. */
    defaultsFor?: (chainId: number) => JobChainDefaults
    /** Refuse a job its chain cannot run as it says (chain-fit.ts): the runner's start does. */
    refuseMisfits?: boolean
  } = {},
): Promise<JobRegistry> {
  const root = resolve(dir)
  const files = (await readdir(root)).filter((file) => file.endsWith('.toml')).sort()
  const configured = chainIds === undefined ? undefined : [chainIds].flat()
  const problems: SpecProblem[] = []
  const notices: string[] = []
  const jobs: Job[] = []
  for (const file of files) {
    const path = join(root, file)
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
    if (choice.kind === 'other-chain' && options.refuseOtherChains)
      problems.push({
        file: path,
        field: 'evmChainID',
        message: `job ${JSON.stringify(job.spec.name)} runs on chain ${String(job.spec.evmChainID)}, which this runner does not serve (configured chains: ${configured.join(', ') || 'none'}): declare that chain (CHAINS_FILE) or take the spec out of the jobs folder`,
      })
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
  const duplicates = duplicateJobIdProblems(jobs)
  problems.push(...duplicates)
  if (problems.length > 0) throw new JobsDirError(problems)
  return new JobRegistry(jobs.map(registerJob), notices)
}

/**
 * A job as its chain runs it, as a Chainlink node's directrequest delegate combines them: it waits for
 * the greater of its own and the chain's minIncomingConfirmations, and a request must pay its
 * minContractPaymentLinkJuels, or the chain's minimum when it sets none.
 */
export function withChainDefaults(spec: JobSpec, defaults: JobChainDefaults): JobSpec {
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
