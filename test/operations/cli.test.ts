import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { freePort } from '../../src/dev/ports.ts'
import { startOwnedProcess, waitFor, type OwnedProcess } from '../../src/dev/process.ts'
import type { HealthReport } from '../../src/health/index.ts'
import { testRedisUrl, uniquePrefix } from '../support/redis.ts'
import { parsePrometheus } from './support.ts'

const bin = join(import.meta.dirname, '../../bin/feedrunner.js')
const started: OwnedProcess[] = []

afterAll(async () => {
  for (const child of started) await child.stop()
})

describe('a process without the adapter serves operations on OPERATIONS_PORT', () => {
  it('feedrunner worker: /ready with Redis and its fetch workers, /live, /metrics', async () => {
    const port = await freePort()
    const child = startOwnedProcess('feedrunner worker', process.execPath, [bin, 'worker'], {
      env: {
        ...process.env,
        REDIS_URL: testRedisUrl(),
        QUEUE_PREFIX: uniquePrefix('ops-cli'),
        // Never called: no fetch job is queued under this prefix.
        SPORTS_URL: 'http://127.0.0.1:9',
        FEED_API_KEY: 'ops-cli-never-shown',
        OPERATIONS_PORT: String(port),
        LOG_LEVEL: 'warn',
      },
    })
    started.push(child)
    const base = `http://127.0.0.1:${port}`
    await waitFor(
      'the operations port to answer ready',
      async () => (await fetch(`${base}/ready`).catch(() => undefined))?.status === 200,
      30_000,
      100,
    )
    const ready = (await (await fetch(`${base}/ready`)).json()) as HealthReport
    expect(Object.keys(ready.checks).sort()).toEqual(['fetch-workers', 'redis'])
    const live = await fetch(`${base}/live`)
    expect(live.status).toBe(200)
    const metrics = await (await fetch(`${base}/metrics`)).text()
    const names = new Set(parsePrometheus(metrics).map((sample) => sample.name))
    expect(names.has('feedrunner_listener_pending_logs')).toBe(true)
    expect(metrics).toContain('# TYPE feedrunner_fetch_duration_seconds histogram')
    // The process's own memory and event loop, as an adapter process has them from the framework.
    expect(
      parsePrometheus(metrics).find((sample) => sample.name === 'process_resident_memory_bytes')
        ?.value,
    ).toBeGreaterThan(10 * 2 ** 20)
    expect(names.has('nodejs_heap_space_size_used_bytes')).toBe(true)
    expect(metrics).not.toContain('ops-cli-never-shown')
    expect(child.output()).toContain(`${base}/metrics`)
  }, 60_000)

  it("feedrunner adapter: /ready on EA_PORT, and on METRICS_PORT bounded adapter metrics beside the framework's, no parameter as a label", async () => {
    const [eaPort, metricsPort] = [await freePort(), await freePort()]
    const child = startOwnedProcess('feedrunner adapter', process.execPath, [bin, 'adapter'], {
      env: {
        ...process.env,
        REDIS_URL: testRedisUrl(),
        QUEUE_PREFIX: uniquePrefix('ops-cli-adapter'),
        EA_PORT: String(eaPort),
        METRICS_PORT: String(metricsPort),
        METRICS_ENABLED: 'true',
        // No fetch worker runs: the request below waits this long, then gets 504.
        ADAPTER_TIMEOUT_MS: '500',
        LOG_LEVEL: 'warn',
      },
    })
    started.push(child)
    const base = `http://127.0.0.1:${eaPort}`
    await waitFor(
      'the adapter to answer ready',
      async () => (await fetch(`${base}/ready`).catch(() => undefined))?.status === 200,
      30_000,
      100,
    )
    expect(
      Object.keys(((await (await fetch(`${base}/ready`)).json()) as HealthReport).checks),
    ).toEqual(['redis'])
    const address = '0x9fE46736679d2D9a65F0992F2272dE9f3c7fa6e0'
    const answer = await fetch(base, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        id: '1',
        data: { endpoint: 'account-balance', blockchain: 'local', address, key: '##signKey' },
      }),
    })
    expect(answer.status).toBe(504)
    const metrics = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text()
    const samples = parsePrometheus(metrics)
    expect(
      samples.find(
        (sample) =>
          sample.name === 'feedrunner_adapter_requests_total' &&
          sample.labels.endpoint === 'account-balance',
      )?.labels.status,
    ).toBe('504')
    // The framework's metrics are on the same port (its own http_requests_total labels by feed id, a known limit).
    expect(samples.some((sample) => sample.name === 'process_cpu_user_seconds_total')).toBe(true)
    expect(
      samples.some(
        (sample) =>
          sample.name === 'feedrunner_queue_jobs' && sample.labels.queue === 'fetch-blockchain',
      ),
    ).toBe(true)
    const ours = metrics
      .split('\n')
      .filter((line) => line.startsWith('feedrunner_'))
      .join('\n')
      .toLowerCase()
    expect(ours).not.toContain(address.slice(2).toLowerCase())
  }, 60_000)
})
