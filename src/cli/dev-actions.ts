import { Contract, JsonRpcProvider, Wallet, type InterfaceAbi } from 'ethers'
import { artifact, compileContracts } from '../chain/artifacts.ts'
import { createLogger } from '../config/logger.ts'
import { parseSettings, type Settings } from '../config/settings.ts'
import { ANVIL_PRIVATE_KEYS } from '../dev/anvil.ts'
import { buildDemoCases, runDemoCases, type DemoResult } from '../dev/demo.ts'
import { DEV_CONSUMER_ADDRESS } from '../dev/deploy.ts'
import { sendConsumerRequests, waitForFulfilments, type ConsumerRequest } from '../dev/requests.ts'
import { startDevStack, type DevStack } from '../dev/stack.ts'
import { loadJobRegistry, type LoadedJob } from '../runner/job-registry.ts'
import { feedJobShape } from '../runner/feed-job.ts'
import { settingsOrExit, stopOnSignal } from './lifecycle.ts'
import { renderTable } from './table.ts'

/** The ports `feedrunner dev` takes when they are free, so `feedrunner request` finds the chain by default. */
const DEV_PORTS = { anvil: 8545, adapter: 8080, feeds: 8090 }

export async function devAction(): Promise<void> {
  const started = Date.now()
  // On a developer's machine the dashboard is on unless DASHBOARD_ENABLED says otherwise.
  const stack = await startStack({ DASHBOARD_ENABLED: 'true' })
  stopOnSignal(() => stack.stop(), '\nstopping...')
  printStack(stack)
  console.log(
    `\nfeedrunner dev ready in ${((Date.now() - started) / 1000).toFixed(1)} s. Ctrl-C stops everything.`,
  )
  console.log(
    `Another terminal: npx feedrunner request game-odds --param ... ; QUEUE_PREFIX=${stack.settings.QUEUE_PREFIX} npx feedrunner status`,
  )
}

export async function demoAction(options: { timeout: string }): Promise<void> {
  const stack = await startStack({ LOG_LEVEL: process.env.LOG_LEVEL ?? 'warn' })
  let results: DemoResult[] = []
  try {
    const cases = await buildDemoCases(stack, stack.runner?.registry.jobs ?? [])
    console.log(`requesting ${cases.length} jobs on chain ${stack.contracts.chainId}...`)
    results = await runDemoCases(stack, cases, Number(options.timeout) * 1000)
  } finally {
    await stack.stop()
  }
  console.log(
    renderTable(
      ['job', 'parameters', 'on chain', 'expected', 'latency', ''],
      results.map((result) => [
        result.job.name,
        result.params.map(([key, value]) => `${key}=${value}`).join(' '),
        result.actual === undefined ? '(not fulfilled)' : String(result.actual),
        String(result.expected),
        result.latencyMs === undefined ? '' : `${result.latencyMs} ms`,
        result.ok ? 'ok' : 'FAILED',
      ]),
    ),
  )
  const failed = results.filter((result) => !result.ok).length
  console.log(
    `\n${results.length - failed} of ${results.length} requests fulfilled with the expected value`,
  )
  process.exit(failed === 0 && results.length > 0 ? 0 : 1)
}

export async function requestAction(
  job: string,
  options: { param: string[]; count: string; timeout: string },
): Promise<void> {
  const settings = settingsOrExit()
  await sendRequests(settings, job, options).catch((error: unknown) => {
    console.error(error instanceof Error ? error.message : String(error))
    process.exit(1)
  })
}

async function startStack(overrides: Record<string, string>): Promise<DevStack> {
  const env = {
    ...process.env,
    ...Object.fromEntries(Object.entries(overrides).filter(([key]) => !process.env[key])),
  }
  try {
    const settings = parseSettings(env)
    return await startDevStack({
      env,
      preferredPorts: DEV_PORTS,
      logger: createLogger(settings, 'feedrunner-dev'),
    })
  } catch (error) {
    console.error(
      `feedrunner could not start the dev stack: ${error instanceof Error ? error.message : String(error)}`,
    )
    process.exit(1)
  }
}

function printStack(stack: DevStack): void {
  const { addresses, chainId } = stack.contracts
  console.log(
    renderTable(
      ['part', 'where'],
      [
        ['Redis', stack.redisUrl],
        ['chain (anvil)', `${stack.rpcUrl} (chain id ${chainId})`],
        ['LinkToken', addresses.linkToken],
        ['Operator', addresses.operator],
        ['FeedConsumer', addresses.consumer],
        ['node address', addresses.nodes.join(', ')],
        ['feed service', `${stack.feedServer.url} (blockchain "local" = this chain)`],
        ['adapter', `${stack.adapter.url} (bridge "datafeed")`],
        ['queue prefix', stack.settings.QUEUE_PREFIX],
        ['health', `${stack.adapter.url}/ready, ${stack.adapter.url}/live`],
        ...(stack.settings.DASHBOARD_ENABLED
          ? [
              [
                'dashboard',
                `${stack.adapter.url}${stack.settings.DASHBOARD_PATH} (queues: ${stack.adapter.url}${stack.settings.DASHBOARD_PATH}/queues)`,
              ],
            ]
          : []),
      ],
    ),
  )
  const jobs = stack.runner?.registry.jobs ?? []
  console.log(`\n${jobs.length} jobs from ${stack.settings.JOBS_DIR}:`)
  console.log(
    renderTable(
      ['job', 'externalJobID', 'answer', 'request parameters'],
      jobs.map((loaded) => {
        const shape = feedJobShape(loaded.job)
        return [
          loaded.name,
          `${loaded.externalJobId}${loaded.job.externalJobIDDerived ? ' (derived)' : ''}`,
          shape.answerType,
          shape.params.join(', '),
        ]
      }),
    ),
  )
}

async function sendRequests(
  settings: Settings,
  jobName: string,
  options: { param: string[]; count: string; timeout: string },
): Promise<void> {
  const rpcUrl = settings.RPC_URL ?? 'http://127.0.0.1:8545'
  const provider = new JsonRpcProvider(rpcUrl, undefined, {
    pollingInterval: 100,
    cacheTimeout: -1,
  })
  const chainId = Number((await provider.getNetwork()).chainId)
  const registry = await loadJobRegistry(settings.JOBS_DIR, chainId)
  const loaded = findJob(registry.jobs, jobName)
  const shape = feedJobShape(loaded.job)
  const params = parseParams(options.param)
  const missing = shape.params.filter(
    (name) => name !== 'path' && name !== 'times' && !params.some(([key]) => key === name),
  )
  if (missing.length > 0)
    throw new Error(
      `job ${loaded.name} reads these request parameters: ${shape.params.join(', ')}; missing: ${missing.join(', ')} (pass --param ${missing[0]}=...)`,
    )
  const unknown = params.filter(([key]) => !shape.params.includes(key)).map(([key]) => key)
  if (unknown.length > 0)
    throw new Error(
      `job ${loaded.name} does not read ${unknown.join(', ')} (it reads ${shape.params.join(', ')})`,
    )

  const requesterKey = settings.REQUESTER_PRIVATE_KEY ?? ANVIL_PRIVATE_KEYS[0]
  const signer = new Wallet(requesterKey, provider)
  const consumerAddress = settings.CONSUMER_ADDRESS ?? DEV_CONSUMER_ADDRESS
  const consumer = new Contract(
    consumerAddress,
    artifact(compileContracts(), 'FeedConsumer').abi as InterfaceAbi,
    signer,
  )
  const count = Math.max(1, Number(options.count) || 1)
  const request: ConsumerRequest = {
    externalJobId: loaded.externalJobId,
    valueType: shape.answerType,
    params,
    payment: loaded.job.spec.minContractPaymentLinkJuels ?? 0n,
  }
  const fromBlock = await provider.getBlockNumber()
  const progressEvery = Math.max(1, Math.floor(count / 10))
  const sent = await sendConsumerRequests(
    consumer,
    signer,
    Array.from({ length: count }, () => request),
    (_sent, index) => {
      if (count > 1 && (index + 1) % progressEvery === 0)
        process.stdout.write(`sent ${index + 1}/${count}\n`)
    },
  )
  const sentAt = new Map(sent.map((item) => [item.requestId, item.sentAt]))
  let done = 0
  const fulfilments = await waitForFulfilments(
    consumer,
    provider,
    sent.map((item) => item.requestId),
    {
      fromBlock,
      timeoutMs: Number(options.timeout) * 1000,
      onFulfilled: (fulfilment) => {
        done += 1
        const latency = fulfilment.seenAt - (sentAt.get(fulfilment.requestId) ?? fulfilment.seenAt)
        if (count <= 20)
          console.log(`${fulfilment.requestId}  ${String(fulfilment.value)}  (${latency} ms)`)
        else if (done % progressEvery === 0) console.log(`fulfilled ${done}/${count}`)
      },
    },
  )
  provider.destroy()
  const latencies = sent
    .flatMap((item) => {
      const fulfilment = fulfilments.get(item.requestId)
      return fulfilment ? [fulfilment.seenAt - item.sentAt] : []
    })
    .sort((a, b) => a - b)
  const percentile = (p: number) =>
    latencies[Math.min(latencies.length - 1, Math.floor((p / 100) * latencies.length))] ?? 0
  console.log(
    `${fulfilments.size} of ${count} fulfilled${latencies.length ? `; latency p50 ${percentile(50)} ms, p99 ${percentile(99)} ms` : ''}`,
  )
  if (fulfilments.size < count) {
    console.log(
      `not fulfilled within ${options.timeout} s: ${sent
        .filter((item) => !fulfilments.has(item.requestId))
        .map((item) => item.requestId)
        .join(', ')} (see: npx feedrunner runs show <requestId>)`,
    )
    process.exitCode = 1
  }
}

function findJob(jobs: readonly LoadedJob[], name: string): LoadedJob {
  const wanted = name.toLowerCase()
  const found = jobs.find(
    (loaded) =>
      loaded.name.toLowerCase() === wanted ||
      loaded.externalJobId === wanted ||
      loaded.job.file.toLowerCase().endsWith(`/${wanted}.toml`) ||
      loaded.job.file.toLowerCase().endsWith(`/${wanted}`),
  )
  if (!found)
    throw new Error(
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
    if (at <= 0) throw new Error(`--param ${JSON.stringify(pair)}: expected key=value`)
    return [pair.slice(0, at), pair.slice(at + 1)]
  })
}
