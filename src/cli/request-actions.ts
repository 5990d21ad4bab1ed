import { Contract, getAddress, JsonRpcProvider, Network, Wallet, type InterfaceAbi } from 'ethers'
import { artifact, compileContracts } from '../chain/artifacts.ts'
import { FeedrunnerError } from '../config/errors.ts'
import { endpointOf, presentVariables, type Settings } from '../config/settings.ts'
import { ANVIL_PRIVATE_KEYS } from '../dev/anvil.ts'
import { demoFeedParams, demoPath, demoTimes } from '../dev/demo.ts'
import { DEV_CONSUMER_ADDRESS } from '../dev/deploy.ts'
import { sendConsumerRequests, type ConsumerRequest, type SentRequest } from '../dev/requests.ts'
import type { DevState } from '../dev/state.ts'
import { getEndpoint, isEndpointName, type CatalogEntry } from '../feeds/catalog/index.ts'
import { connectClient } from '../queue/connection.ts'
import { loadValidJobs, type LoadedJob } from '../runner/job-registry.ts'
import { formatProblem, type SpecProblem } from '../pipeline/index.ts'
import { jobChainDefaults } from '../config/chains.ts'
import { DEFAULT_MIN_CONTRACT_PAYMENT_JUELS } from '../runner/admission.ts'
import { feedJobShape, type FeedJobShape } from '../runner/feed-job.ts'
import { checkServed } from './served-jobs.ts'
import { toDecimal } from '../reduce/index.ts'
import { RunStore } from '../runner/run-record.ts'
import { awaitOutcomes, reportOutcomes } from './request-outcomes.ts'
import type { Redis } from 'ioredis'
import { NO_DEV_STACK, withDevStack } from './dev-state.ts'
import { settingsOrExit } from './lifecycle.ts'

export { describeEndedRun } from './request-outcomes.ts'

export interface RequestOptions {
  param: string[]
  count: string
  timeout: string
  /** LINK juels paid per request (default: the job's minContractPaymentLinkJuels). */
  payment?: string
}

/** A mistake in the command's arguments: said in one line (no stack trace) with what to do. */
function badArgument(message: string): FeedrunnerError {
  return new FeedrunnerError(message, { kind: 'bad_input' })
}

export async function requestAction(job: string, options: RequestOptions): Promise<void> {
  const { env, devStack } = withDevStack()
  if (!devStack && !presentVariables(process.env).RPC_URL) {
    console.error(NO_DEV_STACK)
    process.exit(1)
  }
  const settings = settingsOrExit(env)
  try {
    process.exitCode = await sendRequests(settings, env, devStack, job, options)
  } catch (error) {
    console.error(error instanceof Error ? error.message : String(error))
    process.exit(1)
  }
}

/** Sends the requests and waits for each to be fulfilled or to end otherwise; answers the exit code. */
async function sendRequests(
  settings: Settings,
  env: NodeJS.ProcessEnv,
  devStack: DevState | undefined,
  jobName: string,
  options: RequestOptions,
): Promise<number> {
  const rpcUrl = settings.RPC_URL ?? 'http://127.0.0.1:8545'
  const chainId = await askChainId(rpcUrl, devStack)
  const provider = new JsonRpcProvider(rpcUrl, Network.from(chainId), {
    staticNetwork: true,
    pollingInterval: 100,
    cacheTimeout: -1,
  })
  const redis = await connectClient(settings.REDIS_URL).catch(() => undefined)
  try {
    const loaded = await requestedJob(settings, chainId, jobName, redis)
    const shape = feedJobShape(loaded.job)
    const params = await requestParams(loaded, shape, parseParams(options.param), env, devStack)
    const signer = new Wallet(settings.REQUESTER_PRIVATE_KEY ?? ANVIL_PRIVATE_KEYS[0], provider)
    const consumer = new Contract(
      settings.CONSUMER_ADDRESS ?? devStack?.contracts.consumer ?? DEV_CONSUMER_ADDRESS,
      artifact(compileContracts(), 'FeedConsumer').abi as InterfaceAbi,
      signer,
    )
    await sameOperator(consumer, loaded)
    const count = Math.max(1, Number(options.count) || 1)
    const request: ConsumerRequest = {
      externalJobId: loaded.externalJobId,
      valueType: shape.answerType,
      version: shape.answer.method === 'fulfillOracleRequest' ? 1 : 2,
      params,
      payment: requestPayment(loaded, options.payment),
    }
    const fromBlock = await provider.getBlockNumber()
    const sent = await sendCounted(consumer, signer, request, count)
    const runs = redis ? new RunStore(redis, `${settings.QUEUE_PREFIX}:runner`, chainId) : undefined
    const timeoutMs = Number(options.timeout) * 1000
    const outcomes = await awaitOutcomes(consumer, provider, sent, {
      fromBlock,
      timeoutMs,
      runs,
      shape,
    })
    return reportOutcomes(sent, outcomes, options.timeout)
  } finally {
    provider.destroy()
    redis?.disconnect()
  }
}

/**
 * The job asked for, as the runner loads it: another spec's problem does not stop a request for this
 * one (the runner keeps its jobs too), and the chain's minimum payment applies to a job that sets none.
 * With Redis, it must be a job a runner serves.
 */
async function requestedJob(
  settings: Settings,
  chainId: number,
  jobName: string,
  redis: Redis | undefined,
): Promise<LoadedJob> {
  const { registry, problems } = await loadValidJobs(settings.JOBS_DIR, chainId, {
    defaultsFor: (id) =>
      jobChainDefaults(
        {
          minIncomingConfirmations: settings.MIN_INCOMING_CONFIRMATIONS,
          minContractPaymentLinkJuels: BigInt(settings.MIN_CONTRACT_PAYMENT_LINK_JUELS),
        },
        id,
      ),
  })
  const loaded = findJob(registry.jobs, jobName, problems)
  if (redis) await checkServed(redis, settings.QUEUE_PREFIX, chainId, loaded)
  return loaded
}

/** Sends `count` copies of the request, saying every tenth of them once there are several. */
function sendCounted(
  consumer: Contract,
  signer: Wallet,
  request: ConsumerRequest,
  count: number,
): Promise<SentRequest[]> {
  const progressEvery = Math.max(1, Math.floor(count / 10))
  return sendConsumerRequests(
    consumer,
    signer,
    Array.from({ length: count }, () => request),
    (_sent, index) => {
      if (count > 1 && (index + 1) % progressEvery === 0)
        process.stdout.write(`sent ${index + 1}/${count}\n`)
    },
  )
}

/** The chain id at `rpcUrl`, or an error that says which chain does not answer and what to do. */
async function askChainId(rpcUrl: string, devStack: DevState | undefined): Promise<number> {
  const where = devStack
    ? `the dev stack's chain at ${rpcUrl} (pid ${devStack.pid})`
    : `RPC_URL (${new URL(rpcUrl).host})`
  try {
    const response = await fetch(rpcUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_chainId', params: [] }),
      signal: AbortSignal.timeout(10_000),
    })
    const body = (await response.json()) as { result?: string }
    if (!body.result) throw new Error(`HTTP ${response.status} without a chain id`)
    return Number(body.result)
  } catch (error) {
    const cause = error instanceof Error ? ((error.cause as Error)?.message ?? error.message) : ''
    throw new FeedrunnerError(
      `${where} does not answer (${cause}): ${devStack ? 'restart the dev stack with npm start' : 'check RPC_URL'}`,
      { kind: 'unavailable', cause: error },
    )
  }
}

/**
 * The parameters sent on chain: the given ones, or with none given the endpoint's documented example
 * (the catalog's, as docs/job-specs.md shows it). A missing `path` asks for the endpoint's natural
 * result and a missing `times` keeps two decimals of a decimal answer, as `feedrunner demo` does.
 */
async function requestParams(
  loaded: LoadedJob,
  shape: FeedJobShape,
  given: Array<[string, string]>,
  env: NodeJS.ProcessEnv,
  devStack: DevState | undefined,
): Promise<Array<[string, string]>> {
  const entry =
    shape.endpoint && isEndpointName(shape.endpoint) ? getEndpoint(shape.endpoint) : undefined
  let params = given
  if (given.length === 0 && entry) {
    const example = demoFeedParams(
      shape,
      entry,
      devStack?.demoTransferTx ? { transferTx: devStack.demoTransferTx } : undefined,
    )
    params = Object.entries(example)
    console.log(
      `no --param given: using the documented example of ${entry.name}: ${formatParams(params)}`,
    )
  }
  const unknown = params.filter(([key]) => !shape.params.includes(key)).map(([key]) => key)
  if (unknown.length > 0)
    throw badArgument(
      `job ${loaded.name} does not read ${unknown.join(', ')} (it reads ${shape.params.join(', ')})`,
    )
  const missing = shape.params.filter(
    (name) => name !== 'path' && name !== 'times' && !params.some(([key]) => key === name),
  )
  if (missing.length > 0)
    throw badArgument(
      `job ${loaded.name} reads these request parameters: ${shape.params.join(', ')}; missing: ${missing.join(', ')} (pass --param ${missing[0]}=..., or no --param at all for the documented example)`,
    )
  if (!entry) return params
  const added: Array<[string, string]> = []
  const has = (name: string) => params.some(([key]) => key === name)
  if (shape.params.includes('path') && !has('path')) added.push(['path', demoPath(entry)])
  const path = params.find(([key]) => key === 'path')?.[1] ?? demoPath(entry)
  if (shape.params.includes('times') && !has('times')) {
    // The scale comes from the endpoint's answer now, or from the caller: never from a guess (a
    // fallback of times=1 stored 1 for odds of 1.6 and called it the endpoint's result).
    const answer = await adapterAnswer(env, entry, params, path)
    if (!answer.ok || toDecimal(answer.result) === undefined)
      throw badArgument(
        `job ${loaded.name} scales its answer by the request parameter times, and ${answer.ok ? `the adapter's result for path ${path} is not a number (${JSON.stringify(answer.result)})` : answer.why}, so the scale cannot be told: give it, e.g. --param times=100 to keep two decimals (--param times=1 for a whole number)`,
      )
    added.push(['times', demoTimes(answer.result)])
  }
  if (added.length > 0)
    console.log(
      `added ${formatParams(added)} (from the adapter's result for these parameters: two decimals of a decimal kept)`,
    )
  return [...params, ...added]
}

/** The adapter's `result` for these parameters, or why there is none. */
async function adapterAnswer(
  env: NodeJS.ProcessEnv,
  entry: CatalogEntry,
  params: ReadonlyArray<readonly [string, string]>,
  path: string,
): Promise<{ ok: true; result: unknown } | { ok: false; why: string }> {
  const adapterUrl = env.BRIDGE_DATAFEED_URL
  if (!adapterUrl)
    return { ok: false, why: 'no adapter to ask is known (BRIDGE_DATAFEED_URL is not set)' }
  try {
    const response = await fetch(adapterUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        id: '1',
        data: { endpoint: entry.name, ...Object.fromEntries(params), path },
      }),
      signal: AbortSignal.timeout(20_000),
    })
    const body = (await response.json()) as { result?: unknown; error?: { message?: unknown } }
    if (!response.ok)
      return {
        ok: false,
        why: `the adapter at ${endpointOf(adapterUrl)} answered ${response.status}${typeof body.error?.message === 'string' ? ` (${body.error.message})` : ''}`,
      }
    return { ok: true, result: body.result }
  } catch (error) {
    return {
      ok: false,
      why: `the adapter at ${endpointOf(adapterUrl)} did not answer (${error instanceof Error ? error.message : String(error)})`,
    }
  }
}

/** The consumer asks one Operator: a job that answers another could never see its requests. */
async function sameOperator(consumer: Contract, loaded: LoadedJob): Promise<void> {
  const spec = loaded.job.spec
  if (spec.type !== 'directrequest')
    throw badArgument(
      `job ${loaded.name} is a ${spec.type} job: request sends an OracleRequest, which only a directrequest job answers`,
    )
  const [, operator] = (await consumer.getFunction('chainlinkContracts')()) as [string, string]
  if (getAddress(operator) !== getAddress(spec.contractAddress))
    throw badArgument(
      `job ${loaded.name} answers the Operator ${spec.contractAddress}, and the consumer ${await consumer.getAddress()} asks ${operator}: set CONSUMER_ADDRESS to a consumer of that Operator`,
    )
}

function findJob(
  jobs: readonly LoadedJob[],
  name: string,
  problems: readonly SpecProblem[],
): LoadedJob {
  const wanted = name.toLowerCase()
  const wantedFile = (file: string) =>
    file.toLowerCase().endsWith(`/${wanted}.toml`) || file.toLowerCase().endsWith(`/${wanted}`)
  const found = jobs.find(
    (loaded) =>
      loaded.name.toLowerCase() === wanted ||
      loaded.externalJobId === wanted ||
      wantedFile(loaded.job.file),
  )
  const own = problems.filter((problem) => wantedFile(problem.file))
  if (!found && own.length > 0)
    throw new FeedrunnerError(`job ${name}: ${own.map(formatProblem).join('; ')}`, {
      kind: 'config',
    })
  if (found && problems.length > 0)
    console.error(
      `(other specs of the jobs folder have problems, and a runner keeps the jobs it had while they do: ${problems.map(formatProblem).join('; ')})`,
    )
  if (!found)
    throw badArgument(
      `no job ${JSON.stringify(name)}; jobs: ${jobs
        .map((loaded) =>
          loaded.job.file
            .split('/')
            .pop()
            ?.replace(/\.toml$/, ''),
        )
        .join(', ')}`,
    )
  return found
}

function parseParams(pairs: readonly string[]): Array<[string, string]> {
  return pairs.map((pair) => {
    const at = pair.indexOf('=')
    if (at <= 0) throw badArgument(`--param ${JSON.stringify(pair)}: expected key=value`)
    return [pair.slice(0, at), pair.slice(at + 1)]
  })
}

function formatParams(params: ReadonlyArray<readonly [string, string]>): string {
  return params
    .map(([key, value]) => `${key}=${/\s/.test(value) ? JSON.stringify(value) : value}`)
    .join(' ')
}

/** The juels each request pays: --payment, else the job's minContractPaymentLinkJuels. */
function requestPayment(loaded: LoadedJob, given: string | undefined): bigint {
  // The job's minimum, or the chain's when it sets none (as the runner applies it).
  const spec = loaded.job.spec
  const minimum =
    (spec.type === 'directrequest' ? spec.minContractPaymentLinkJuels : undefined) ??
    DEFAULT_MIN_CONTRACT_PAYMENT_JUELS
  if (given === undefined) return minimum
  if (!/^[0-9]+$/.test(given))
    throw badArgument(`--payment ${JSON.stringify(given)}: expected a whole number of juels`)
  const payment = BigInt(given)
  if (payment < minimum)
    throw badArgument(
      `--payment ${given}: job ${loaded.name} asks at least ${minimum} juels (minContractPaymentLinkJuels)`,
    )
  return payment
}
