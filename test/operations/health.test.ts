import { Worker } from 'bullmq'
import type { Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startAnvil, type Anvil } from '../../src/dev/anvil.ts'
import { freePort } from '../../src/dev/ports.ts'
import { waitFor } from '../../src/dev/process.ts'
import { startPrivateRedis, type PrivateRedis } from '../../src/dev/redis.ts'
import {
  Health,
  redisCheck,
  rpcCheck,
  startOperationsServer,
  workersCheck,
  type HealthReport,
  type OperationsServer,
} from '../../src/health/index.ts'
import { createRedisConnection } from '../../src/queue/connection.ts'

async function getReport(url: string): Promise<{ status: number; report: HealthReport }> {
  const response = await fetch(url)
  return { status: response.status, report: (await response.json()) as HealthReport }
}

describe('liveness and readiness', () => {
  let redis: PrivateRedis
  let anvil: Anvil
  let server: OperationsServer
  let worker: Worker
  let checkConnection: Redis
  const health = new Health()
  const removers: Array<() => Promise<void>> = []

  beforeAll(async () => {
    redis = await startPrivateRedis()
    anvil = await startAnvil()
    worker = new Worker('health-probe', async () => undefined, {
      connection: createRedisConnection(redis.url, 'worker'),
      prefix: 'ops-health',
    })
    worker.on('error', () => undefined)
    await worker.waitUntilReady()
    // The check's connection reconnects by itself while the test stops Redis; the check reports it.
    checkConnection = createRedisConnection(redis.url, 'client')
    checkConnection.on('error', () => undefined)
    removers.push(async () => checkConnection.disconnect())
    removers.push(
      health.add(redisCheck(checkConnection)),
      health.add(rpcCheck(anvil.rpcUrl)),
      health.add(workersCheck('probe-workers', () => [worker])),
    )
    server = await startOperationsServer({ port: 0, host: '127.0.0.1', health })
  })

  afterAll(async () => {
    await server?.close()
    await worker?.close(true).catch(() => undefined)
    for (const remove of removers) await remove()
    await anvil?.stop()
    await redis?.stop()
  })

  it('is ready while Redis, the RPC node and the workers are up', async () => {
    const { status, report } = await getReport(`${server.url}/ready`)
    expect(status).toBe(200)
    expect(report.status).toBe('ok')
    expect(Object.keys(report.checks).sort()).toEqual(['probe-workers', 'redis', 'rpc'])
    expect((await getReport(`${server.url}/live`)).status).toBe(200)
  })

  it('fails readiness with 503 naming Redis while Redis is down, stays live, and recovers when Redis is back', async () => {
    const port = redis.port
    await redis.stop()
    const down = await getReport(`${server.url}/ready`)
    expect(down.status).toBe(503)
    expect(down.report.status).toBe('unavailable')
    expect(down.report.down).toEqual(['redis'])
    expect(down.report.checks.redis?.error).toMatch(/Redis/)
    // The process can do nothing about Redis: a restart would not help, so it stays live.
    expect((await getReport(`${server.url}/live`)).status).toBe(200)

    redis = await startPrivateRedis({ port })
    await waitFor(
      'readiness to recover',
      async () => (await fetch(`${server.url}/ready`)).status === 200,
      10_000,
    )
    expect((await getReport(`${server.url}/ready`)).report.down).toEqual([])
  })

  it('fails readiness naming the RPC node while it is down, without its URL', async () => {
    const unreachable = new Health()
    unreachable.add(
      rpcCheck(`http://user:secret-token@127.0.0.1:${await freePort()}/v3/secret-token`),
    )
    const report = await unreachable.readiness()
    expect(report.down).toEqual(['rpc'])
    expect(report.checks.rpc?.error).toMatch(/RPC node does not answer/)
    expect(JSON.stringify(report)).not.toContain('secret-token')
  })

  it('fails liveness and readiness when a worker has closed', async () => {
    await worker.close()
    const live = await getReport(`${server.url}/live`)
    expect(live.status).toBe(503)
    expect(live.report.down).toEqual(['probe-workers'])
    expect(live.report.checks['probe-workers']?.error).toContain('health-probe')
    expect((await getReport(`${server.url}/ready`)).report.down).toContain('probe-workers')
  })

  it('serves the metrics text on the same port', async () => {
    const response = await fetch(`${server.url}/metrics`)
    expect(response.status).toBe(200)
    expect(response.headers.get('content-type')).toContain('text/plain')
    expect(await response.text()).toContain('# TYPE feedrunner_requests_total counter')
  })
})
