import { readdir } from 'node:fs/promises'
import { join } from 'node:path'
import type { Command } from 'commander'
import { jobsFolders } from '../config/jobs-folders.ts'
import { settingsOrExit } from './lifecycle.ts'
import type { Job, JobSummary, TaskOutcome } from '../pipeline/index.ts'
import { register as registerRetarget } from './jobs-retarget.ts'
import { validateJson } from './jobs-validate-json.ts'
import { reader } from './readers.ts'

// The pipeline (ethers, cbor-x, jsonpath) loads only when a jobs command runs, so other commands start fast.
const pipeline = (): Promise<typeof import('../pipeline/index.ts')> =>
  import('../pipeline/index.ts')

/** `feedrunner jobs validate [FILES]` and `feedrunner jobs run SPEC --param k=v ...`. */
export function register(program: Command): void {
  const jobs = program
    .command('jobs')
    .description(
      'Chainlink job specs (directrequest, cron, webhook): check them, run them off chain',
    )
  jobs
    .command('validate')
    .description('Check job specs; every problem is printed with file, line and task')
    .argument('[files...]', 'spec files (default: every .toml in JOBS_DIR or jobs/)')
    .option('--json', 'print JSON alone on stdout: each spec, valid or with its problems')
    .action(async (files: string[], options: { json?: boolean }) => {
      const specs = files.length > 0 ? files : await defaultSpecFiles()
      process.exitCode = options.json ? await validateJson(specs) : await validate(specs)
    })
  reader(jobs.command('list'))
    .description(
      'The job specs as a Markdown table (the README\'s "Job specs" table); with --running, the jobs a running feedrunner serves',
    )
    .argument('[files...]', 'spec files (default: every .toml in JOBS_DIR or jobs/)')
    .option(
      '--running',
      'the jobs the running runners have loaded, per chain (the dev stack of this checkout, or REDIS_URL and QUEUE_PREFIX)',
    )
    .option('--json', 'print JSON alone on stdout')
    .action(async (files: string[], options: { json?: boolean; running?: boolean }) => {
      process.exitCode = options.running
        ? await (await import('./jobs-running.ts')).runningJobsAction(options)
        : await list(files.length > 0 ? files : await defaultSpecFiles(), options)
    })
  registerRetarget(jobs)
  jobs
    .command('run')
    .description(
      'Run a spec off chain as if a consumer had requested it, and print every task output and the calldata',
    )
    .argument('<spec>', 'spec file')
    .option(
      '-p, --param <key=value>',
      'a request parameter (repeat; sent as req._add(key, value))',
      collect,
      [],
    )
    .option(
      '--callback <signature>',
      'callback the requester names, e.g. "fulfillUint256(bytes32,uint256)" (default: FeedConsumer\'s for the spec\'s value type)',
    )
    .option('--requester <address>', 'requester and callback address of the simulated request')
    .option(
      '-b, --bridge <name=url>',
      'a bridge URL for this run (repeat), instead of BRIDGE_<NAME>_URL',
      collect,
      [],
    )
    .option(
      '--tx <hash>',
      'run on the OracleRequest recorded in this transaction (read from RPC_URL), instead of --param',
    )
    .option('--log <blockHash:logIndex>', 'run on the OracleRequest log at this position')
    .option('--request-id <id>', 'with --tx: which request, when the transaction holds several')
    .option('--json', 'print the result as JSON')
    .action(async (spec: string, options: RunCommandOptions) => {
      process.exitCode = await run(spec, options)
    })
}

type RecordedFromChain = Awaited<
  ReturnType<(typeof import('./recorded-request.ts'))['readRecordedRequest']>
>

function collect(value: string, previous: string[]): string[] {
  return [...previous, value]
}

async function defaultSpecFiles(): Promise<string[]> {
  const folders = jobsFolders(settingsOrExit().JOBS_DIR)
  const perFolder = await Promise.all(
    folders.map(async (dir) => {
      const names = await readdir(dir).catch(() => [] as string[])
      return names
        .filter((name) => name.endsWith('.toml'))
        .sort()
        .map((name) => join(dir, name))
    }),
  )
  return perFolder.flat()
}

async function validate(files: readonly string[]): Promise<number> {
  const { duplicateJobIdProblems, formatProblem, jobTypesInWords, loadJobSpecFile } =
    await pipeline()
  if (files.length === 0) {
    console.error('no job spec files given or found')
    return 1
  }
  const failed = new Set<string>()
  const jobs: Job[] = []
  for (const file of files) {
    const { job, problems } = await loadJobSpecFile(file)
    if (problems.length > 0 || !job) {
      failed.add(file)
      for (const problem of problems) console.error(formatProblem(problem))
      const jobType = problems.find((problem) => problem.jobType)?.jobType
      if (jobType) console.error(`${file}: refused as a ${jobType} job`)
      continue
    }
    jobs.push(job)
    const id = `externalJobID ${job.spec.externalJobID}${job.externalJobIDDerived ? ' (derived from the name and file name)' : ''}`
    const chain =
      job.spec.evmChainID === undefined
        ? "no evmChainID: runs on the runner's only chain"
        : `chain ${job.spec.evmChainID}`
    console.log(
      `ok ${file}: ${job.spec.type} job ${job.spec.name}, ${id}, ${chain}, ${job.tasks.length} tasks`,
    )
  }
  // Specs a runner would load together must not share an id.
  for (const problem of duplicateJobIdProblems(jobs)) {
    failed.add(problem.file)
    console.error(formatProblem(problem))
  }
  console.log(`${files.length - failed.size} of ${files.length} specs valid`)
  if (failed.size > 0) console.error(`job types feedrunner runs: ${jobTypesInWords()}`)
  return failed.size === 0 ? 0 : 1
}

async function list(files: readonly string[], options: { json?: boolean } = {}): Promise<number> {
  const { formatProblem, jobTableMarkdown, loadJobSpecFile, summariseJob } = await pipeline()
  const summaries: JobSummary[] = []
  for (const file of files) {
    const { job, problems } = await loadJobSpecFile(file)
    if (!job) {
      for (const problem of problems) console.error(formatProblem(problem))
      return 1
    }
    summaries.push(summariseJob(job))
  }
  console.log(
    options.json
      ? JSON.stringify(
          summaries,
          (_key, value: unknown) => (typeof value === 'bigint' ? value.toString() : value),
          2,
        )
      : jobTableMarkdown(summaries),
  )
  return 0
}

function parseParams(pairs: readonly string[], option: string): [string, string][] {
  return pairs.map((pair) => {
    const at = pair.indexOf('=')
    if (at <= 0) throw new Error(`${option} ${JSON.stringify(pair)}: expected key=value`)
    return [pair.slice(0, at), pair.slice(at + 1)]
  })
}

interface RunCommandOptions {
  param: string[]
  bridge: string[]
  callback?: string
  requester?: string
  tx?: string
  log?: string
  requestId?: string
  json?: boolean
}

async function run(file: string, options: RunCommandOptions): Promise<number> {
  const { dryRunJob, formatProblem, isolationFromSettings, loadJobSpecFile, pipelineLimits } =
    await pipeline()
  const settings = (await import('./lifecycle.ts')).settingsOrExit()
  const { job, problems } = await loadJobSpecFile(file)
  if (!job) {
    for (const problem of problems) console.error(formatProblem(problem))
    return 1
  }
  let params: [string, string][]
  // The dev stack of this checkout, when one runs, provides BRIDGE_DATAFEED_URL (its adapter).
  const { env } = (await import('./dev-state.ts')).withDevStack()
  try {
    params = parseParams(options.param, '--param')
    for (const [name, url] of parseParams(options.bridge, '--bridge'))
      env[`BRIDGE_${name.toUpperCase().replace(/[^A-Z0-9]/g, '_')}_URL`] = url
  } catch (error) {
    console.error((error as Error).message)
    return 2
  }
  let fromChain: RecordedFromChain | undefined
  if (options.tx !== undefined || options.log !== undefined) {
    if (params.length > 0) {
      console.error('--param and --tx/--log exclude each other: the recorded request has its own')
      return 2
    }
    try {
      fromChain = await (await import('./recorded-request.ts')).readRecordedRequest(job, options)
    } catch (error) {
      const { rootCauseFirst } = await import('../config/errors.ts')
      console.error(rootCauseFirst(error))
      return 1
    }
  }
  const printer = await dryRunPrinter(settings.TASK_OUTPUT_MAX_CHARS)
  // The runner's isolates and budgets: a run off chain is bounded as the runner bounds it.
  const isolation = isolationFromSettings(settings)
  const dryRun = await dryRunJob(job, {
    params,
    env,
    limits: pipelineLimits(settings),
    isolation,
    callbackFunction: options.callback,
    requester: options.requester,
    recorded: fromChain?.recorded,
    call: fromChain?.call,
    estimateGas: fromChain?.estimateGas,
    // A job with forwardingAllowed forwards through the chain's forwarder (the dev stack's here).
    forwarder: env.FORWARDER_ADDRESS || settings.FORWARDER_ADDRESS,
    blockRoots: fromChain?.blockRoots,
    onTask: options.json ? undefined : printer.task,
  }).finally(async () => {
    fromChain?.close()
    await isolation.close()
  })
  return options.json ? printer.json(dryRun) : printer.text(dryRun)
}

type DryRun = Awaited<ReturnType<(typeof import('../pipeline/index.ts'))['dryRunJob']>>

/**
 * How `jobs run` shows a run: each task as it ends, then the calldata and the value, or JSON alone.
 * Every value is cut at TASK_OUTPUT_MAX_CHARS (a source picks the size of what it answers); a run a
 * bound stopped says which bound, as the runner would have stopped it.
 */
async function dryRunPrinter(maxChars: number): Promise<{
  task: (outcome: TaskOutcome) => void
  json: (dryRun: DryRun) => number
  text: (dryRun: DryRun) => number
}> {
  const { boundedPlain, decodeAnyFulfilment, describeValue } = await pipeline()
  const { boundOf } = await import('../config/errors.ts')
  const shownValue = (value: unknown): unknown => boundedPlain(value, maxChars)
  return {
    task(outcome) {
      const status = outcome.ok ? 'ok  ' : outcome.skipped ? 'skip' : 'FAIL'
      const shown = outcome.ok ? describeValue(outcome.value) : (outcome.error ?? '')
      const text = shown.length > 400 ? `${shown.slice(0, 400)}... (${shown.length} chars)` : shown
      console.log(
        `${status} ${outcome.id.padEnd(12)} ${outcome.type.padEnd(15)} ${String(outcome.durationMs).padStart(5)} ms  ${text}`,
      )
    },
    json({ result, transaction, request, ...dryRun }) {
      const output = {
        requestId: request.requestId,
        tasks: result.tasks.map((task) => ({
          id: task.id,
          type: task.type,
          ok: task.ok,
          value: task.ok ? shownValue(task.value) : undefined,
          error: task.error,
          bound: task.failure && boundOf(task.failure),
        })),
        calldata: transaction?.data,
        to: transaction?.to,
        value: dryRun.value === undefined ? undefined : shownValue(dryRun.value),
        valueType: dryRun.valueType,
        errors: result.errors,
      }
      console.log(JSON.stringify(output, null, 2))
      return result.ok ? 0 : 1
    },
    text({ result, transaction, ...dryRun }) {
      console.log('')
      if (transaction) {
        console.log(
          `calldata to ${transaction.to} (gas limit ${transaction.gasLimit ?? 'default'}):`,
        )
        console.log(transaction.data)
        if (dryRun.forwarded)
          console.log(
            `forwarded: the AuthorizedForwarder ${transaction.to} calls ${dryRun.forwarded.to} with:\n${dryRun.forwarded.data}`,
          )
        try {
          const fulfilment = decodeAnyFulfilment((dryRun.forwarded ?? transaction).data)
          console.log(
            `${fulfilment.method} requestId ${fulfilment.requestId} callback ${fulfilment.callbackAddress} ${fulfilment.callbackFunctionId}`,
          )
        } catch {
          // not a fulfilment; the raw calldata above says it all
        }
        if (dryRun.value !== undefined)
          console.log(`value: ${describeValue(dryRun.value)} (${dryRun.valueType})`)
      }
      if (result.ok) return 0
      // The first task a bound stopped: the tasks after it failed because of it.
      const stopped = result.tasks.find((task) => task.failure && boundOf(task.failure))
      if (stopped)
        console.error(
          `stopped by a bound: task ${stopped.id} passed ${boundOf(stopped.failure)}, as the runner would stop it (docs/security.md)`,
        )
      console.error(`run failed: ${result.errors.join('; ')}`)
      return 1
    },
  }
}
