/**
 * Adapter benchmark (`npm run bench:adapter`). In one run, on loopback, each server in its own process:
 * 1. cache-hit throughput and latency of feedrunner's adapter next to a minimal adapter built with the
 *    same framework's HttpTransport (the baseline), same request, same load;
 * 2. the latency a cold request (cache miss: queue, worker, feed service) adds over a direct GET to
 *    the feed service, one request at a time, interleaved.
 * 3. fairness: another client's cold requests alone and during a flood of 600 from one client
 *    (bench/adapter-fairness.ts); `npm run bench:adapter -- fairness` runs only this phase.
 * Bounded: a fixed duration per load phase and a fixed number of cold requests. BENCH_FEED_FAULTS is
 * the feed service's `--faults`: `slow=1,slowMs=100` makes it a feed service 100 ms away.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { writeFileSync } from 'node:fs'
import { Agent, request } from 'node:http'
import { setTimeout as sleep } from 'node:timers/promises'
import { freePort } from '../src/dev/ports.ts'
import { redisAnswers, startPrivateRedis, type PrivateRedis } from '../src/dev/redis.ts'
import { feedCatalog } from '../src/feeds/catalog/index.ts'
import { coldStages, percentile } from './adapter-stages.ts'
import { fairnessPhase } from './adapter-fairness.ts'
import { printAdapterReport, printFairness, type AdapterResults } from './adapter-report.ts'

const KEY = 'bench-feed-key-2f6c'
const LOAD_SECONDS = Number(process.env.BENCH_SECONDS ?? 5)
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 32)
const COLD_REQUESTS = Number(process.env.BENCH_COLD_REQUESTS ?? 200)
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3)
const FEED_FAULTS = process.env.BENCH_FEED_FAULTS ? ['--faults', process.env.BENCH_FEED_FAULTS] : []
const odds = feedCatalog['game-odds']

/** The baseline: the framework's own HttpTransport for game-odds, default result homeMoneyLine. */
async function runBaselineAdapter(): Promise<void> {
  const { Adapter, AdapterEndpoint } =
    await import('@chainlink/external-adapter-framework/adapter/index.js')
  const { HttpTransport } =
    await import('@chainlink/external-adapter-framework/transports/index.js')
  const { expose } = await import('@chainlink/external-adapter-framework')
  const { inputParametersFor } = await import('../src/adapter/input-parameters.ts')
  type Types = {
    Parameters: Record<string, never>
    Response: { Data: Record<string, unknown>; Result: number }
    Settings: import('@chainlink/external-adapter-framework/config/index.js').BaseAdapterSettings
    Provider: { RequestBody: never; ResponseBody: { data: Record<string, unknown> } }
  }
  const feedUrl = process.env.SPORTS_URL!
  const transport = new HttpTransport<Types>({
    prepareRequests: (params) =>
      params.map((param) => ({
        params: [param],
        request: {
          baseURL: feedUrl,
          url: odds.path,
          params: { ...(param as unknown as Record<string, string>), key: KEY },
        },
      })),
    parseResponse: (params, response) =>
      params.map((param) => ({
        params: param,
        response: { data: response.data, result: Number(response.data.data.homeMoneyLine) },
      })),
  })
  const adapter = new Adapter({
    name: 'BASELINE',
    endpoints: [
      new AdapterEndpoint<Types>({
        name: odds.name,
        inputParameters: inputParametersFor(odds) as never,
        transport,
      }),
    ],
    rateLimiting: { tiers: { default: { rateLimit1s: 5 } } },
  })
  await expose(adapter)
  process.once('SIGTERM', () => process.exit(0))
  console.log('baseline adapter listening')
}

interface Spawned {
  child: ChildProcess
  output: () => string
  stop(): Promise<void>
}

async function spawnTsx(
  args: string[],
  env: Record<string, string>,
  ready: RegExp,
): Promise<Spawned> {
  const profile =
    process.env.BENCH_PROFILE_DIR && /adapter/.test(args.join(' '))
      ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_PROFILE_DIR}`]
      : []
  const child = spawn(process.execPath, [...profile, '--import', 'tsx', ...args], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let output = ''
  child.stdout?.on('data', (chunk: Buffer) => (output = (output + chunk.toString()).slice(-20_000)))
  child.stderr?.on('data', (chunk: Buffer) => (output = (output + chunk.toString()).slice(-20_000)))
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
  const spawned: Spawned = {
    child,
    output: () => output,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return
      child.kill('SIGTERM')
      const timer = setTimeout(() => child.kill('SIGKILL'), 5_000)
      await exited
      clearTimeout(timer)
    },
  }
  const deadline = Date.now() + 60_000
  while (!ready.test(output)) {
    if (child.exitCode !== null || Date.now() > deadline) {
      await spawned.stop()
      throw new Error(`${args.join(' ')} did not start:\n${output}`)
    }
    await sleep(50)
  }
  return spawned
}

const agent = new Agent({ keepAlive: true, maxSockets: CONNECTIONS })

/** One HTTP call on a kept-alive connection; resolves with status and milliseconds. */
function call(
  url: string,
  method: 'GET' | 'POST',
  body?: string,
): Promise<{ status: number; ms: number; text: string }> {
  const started = performance.now()
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      {
        method,
        agent,
        headers: body
          ? { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) }
          : {},
      },
      (res) => {
        let text = ''
        res.setEncoding('utf8')
        res.on('data', (chunk: string) => (text += chunk))
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, ms: performance.now() - started, text }),
        )
      },
    )
    req.on('error', reject)
    req.end(body)
  })
}

interface LoadResult {
  requests: number
  errors: number
  perSecond: number
  p50: number
  p99: number
}

/** CONNECTIONS loops, each sending the same request one after another, for LOAD_SECONDS. */
async function load(url: string, body: string): Promise<LoadResult> {
  const latencies: number[] = []
  let errors = 0
  const started = performance.now()
  const until = started + LOAD_SECONDS * 1_000
  await Promise.all(
    Array.from({ length: CONNECTIONS }, async () => {
      while (performance.now() < until) {
        const answer = await call(url, 'POST', body)
        if (answer.status === 200) latencies.push(answer.ms)
        else errors++
      }
    }),
  )
  const seconds = (performance.now() - started) / 1_000
  latencies.sort((a, b) => a - b)
  return {
    requests: latencies.length,
    errors,
    perSecond: latencies.length / seconds,
    p50: percentile(latencies, 50),
    p99: percentile(latencies, 99),
  }
}

/** Posts until the answer is 200 (the baseline answers 504 until its background loop has fetched). */
async function warm(url: string, body: string): Promise<void> {
  const deadline = Date.now() + 30_000
  for (;;) {
    const answer = await call(url, 'POST', body)
    if (answer.status === 200) return
    if (Date.now() > deadline)
      throw new Error(`${url} never answered 200: ${answer.status} ${answer.text}`)
    await sleep(100)
  }
}

/** The Redis at REDIS_URL, or a private one when none answers there. */
async function openRedis(): Promise<{ redisUrl: string; privateRedis?: PrivateRedis }> {
  const redisUrl = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379'
  if (await redisAnswers(redisUrl)) return { redisUrl }
  const privateRedis = await startPrivateRedis()
  return { redisUrl: privateRedis.url, privateRedis }
}

/** feedrunner's side: the local feed service, a fetch worker and the adapter, each a process. */
async function startFeedrunner(processes: Spawned[], redisUrl: string) {
  const [feedPort, oursPort, oursMetrics] = await Promise.all([freePort(), freePort(), freePort()])
  const feedUrl = `http://127.0.0.1:${feedPort}`
  const env = {
    REDIS_URL: redisUrl,
    QUEUE_PREFIX: `bench.${Date.now()}`,
    SPORTS_URL: feedUrl,
    WEATHER_URL: feedUrl,
    FEED_API_KEY: KEY,
    // The cold requests are weather forecasts: no rate limit of the family's in the way, unless the
    // fairness phase is asked to run under one.
    RATE_LIMIT_WEATHER_PER_SECOND: process.env.BENCH_WEATHER_RATE_LIMIT ?? '100000',
    LOG_LEVEL: 'warn',
  }
  processes.push(
    await spawnTsx(
      ['src/cli/main.ts', 'feeds', 'serve', '--port', String(feedPort), ...FEED_FAULTS],
      { FEEDS_SERVER_KEYS: KEY },
      /feed service listening/,
    ),
  )
  processes.push(await spawnTsx(['src/cli/main.ts', 'worker'], env, /fetch workers running/))
  processes.push(
    await spawnTsx(
      ['src/cli/main.ts', 'adapter'],
      { ...env, EA_PORT: String(oursPort), METRICS_PORT: String(oursMetrics) },
      /adapter listening/,
    ),
  )
  return { ours: `http://127.0.0.1:${oursPort}/`, feedUrl, env }
}

/** The framework's own HttpTransport adapter over the same feed service (the last process). */
async function startBaselineAdapter(processes: Spawned[], feedUrl: string): Promise<string> {
  const [basePort, baseMetrics] = await Promise.all([freePort(), freePort()])
  processes.push(
    await spawnTsx(
      ['bench/adapter.ts', 'baseline-adapter'],
      {
        SPORTS_URL: feedUrl,
        EA_PORT: String(basePort),
        METRICS_PORT: String(baseMetrics),
        LOG_LEVEL: 'warn',
      },
      /baseline adapter listening/,
    ),
  )
  return `http://127.0.0.1:${basePort}/`
}

/**
 * Cache hits: ROUNDS rounds, alternating which adapter goes first; each one's best run counts (on a
 * shared machine the worst runs measure the neighbours, not the adapter).
 */
async function cacheHits(ours: string, baseline: string, body: string) {
  const runs: { ours: LoadResult[]; baseline: LoadResult[] } = { ours: [], baseline: [] }
  for (let round = 0; round < ROUNDS; round++) {
    const order =
      round % 2 === 0 ? (['ours', 'baseline'] as const) : (['baseline', 'ours'] as const)
    for (const which of order)
      runs[which].push(await load(which === 'ours' ? ours : baseline, body))
  }
  const best = (results: LoadResult[]) =>
    results.reduce((a, b) => (b.perSecond > a.perSecond ? b : a))
  const feedrunner = best(runs.ours)
  const framework = best(runs.baseline)
  return {
    feedrunner,
    baseline: framework,
    throughputRatio: feedrunner.perSecond / framework.perSecond,
    runs: {
      feedrunner: runs.ours.map((run) => Math.round(run.perSecond)),
      baseline: runs.baseline.map((run) => Math.round(run.perSecond)),
    },
  }
}

/** Cold requests through the adapter beside direct GETs of the feed service, and where they waited. */
async function coldFigures(
  ours: string,
  feedUrl: string,
  env: { QUEUE_PREFIX: string },
  redisUrl: string,
) {
  const { direct, cold } = await coldRequests(ours, feedUrl)
  return {
    directGet: { p50: percentile(direct, 50), p99: percentile(direct, 99) },
    adapter: { p50: percentile(cold, 50), p99: percentile(cold, 99) },
    overheadP50: percentile(cold, 50) - percentile(direct, 50),
    overheadP99: percentile(cold, 99) - percentile(direct, 99),
    medianStagesMs: await coldStages(redisUrl, env.QUEUE_PREFIX),
  }
}

async function main(): Promise<void> {
  const { redisUrl, privateRedis } = await openRedis()
  const processes: Spawned[] = []
  try {
    const { ours, feedUrl, env } = await startFeedrunner(processes, redisUrl)
    const fairnessOf = { url: redisUrl, prefix: env.QUEUE_PREFIX }
    if (process.argv[2] === 'fairness')
      return await fairness(ours, env.RATE_LIMIT_WEATHER_PER_SECOND, fairnessOf)
    const baseline = await startBaselineAdapter(processes, feedUrl)
    const body = JSON.stringify({ id: '1', data: { endpoint: odds.name, ...odds.example } })
    await warm(ours, body)
    await warm(baseline, body)
    const cacheHit = await cacheHits(ours, baseline, body)
    // The baseline's background loop keeps polling the feed service; stop it before timing cold requests.
    await processes.pop()?.stop()
    const { cpus, loadavg } = await import('node:os')
    const results: AdapterResults = {
      when: new Date().toISOString(),
      machine: { cpus: cpus().length, load: loadavg().map((value) => Number(value.toFixed(2))) },
      settings: {
        loadSeconds: LOAD_SECONDS,
        rounds: ROUNDS,
        connections: CONNECTIONS,
        coldRequests: COLD_REQUESTS,
      },
      cacheHit,
      cold: await coldFigures(ours, feedUrl, env, redisUrl),
    }
    printAdapterReport(results, { CONNECTIONS, LOAD_SECONDS, ROUNDS, COLD_REQUESTS })
    writeFileSync(
      new URL('./results/adapter.json', import.meta.url),
      `${JSON.stringify(results, null, 2)}\n`,
    )
    await fairness(ours, env.RATE_LIMIT_WEATHER_PER_SECOND, fairnessOf)
  } finally {
    agent.destroy()
    for (const spawned of processes.reverse()) await spawned.stop()
    await privateRedis?.stop()
  }
}

/** The fairness phase, printed and written to results/adapter-fairness.json. */
async function fairness(
  ours: string,
  rateLimit: string,
  redis: { url: string; prefix: string },
): Promise<void> {
  const figures = await fairnessPhase(ours, rateLimit, redis)
  printFairness(figures)
  writeFileSync(
    new URL('./results/adapter-fairness.json', import.meta.url),
    `${JSON.stringify({ when: new Date().toISOString(), ...figures }, null, 2)}\n`,
  )
}

/**
 * Cold requests: each one a new query (a forecast for another latitude), interleaved with a direct GET
 * of an equally new query to the feed service. Both lists come back sorted.
 */
async function coldRequests(
  ours: string,
  feedUrl: string,
): Promise<{ direct: number[]; cold: number[] }> {
  const weather = feedCatalog.weather
  const geo = weather.variants!.find((variant) => variant.params.includes('latitude'))!.example
  const direct: number[] = []
  const cold: number[] = []
  for (let i = 0; i < COLD_REQUESTS; i++) {
    const latitude = (-80 + (i * 160) / COLD_REQUESTS).toFixed(4)
    const directQuery = new URLSearchParams({ ...geo, latitude, longitude: '10.5', key: KEY })
    const d = await call(`${feedUrl}${weather.path}?${directQuery}`, 'GET')
    if (d.status !== 200) throw new Error(`direct GET failed: ${d.status} ${d.text}`)
    direct.push(d.ms)
    const c = await call(
      ours,
      'POST',
      JSON.stringify({
        id: String(i),
        data: { endpoint: 'weather', ...geo, latitude, longitude: '11.5' },
      }),
    )
    if (c.status !== 200) throw new Error(`cold adapter request failed: ${c.status} ${c.text}`)
    cold.push(c.ms)
  }
  direct.sort((a, b) => a - b)
  cold.sort((a, b) => a - b)
  return { direct, cold }
}

if (process.argv[2] === 'baseline-adapter') {
  await runBaselineAdapter()
} else {
  await main()
}
