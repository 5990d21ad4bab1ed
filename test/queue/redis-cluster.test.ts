import { execFileSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { randomUUID } from 'node:crypto'
import { Wallet } from 'ethers'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { parseSettings, SettingsError } from '../../src/config/settings.ts'
import { freePort } from '../../src/dev/ports.ts'
import { startOwnedProcess, waitFor, type OwnedProcess } from '../../src/dev/process.ts'
import { redisServerInstalled } from '../../src/dev/redis.ts'
import {
  sendConsumerRequests,
  waitForFulfilments,
  type ConsumerRequest,
} from '../../src/dev/requests.ts'
import { startDevStack, type DevStack } from '../../src/dev/stack.ts'
import { clusterOfUrl, createRedisConnection } from '../../src/queue/connection.ts'
import { RedisEvictionWatch } from '../../src/queue/redis-eviction.ts'
import { scanKeys } from '../../src/queue/scan-keys.ts'
import { loadJobRegistry } from '../../src/runner/job-registry.ts'
import { RunStore } from '../../src/runner/run-record.ts'
import { readStatus } from '../../src/runner/status.ts'
import { startPart, stopPart, type PartProcess } from '../reliability/support.ts'
import { testRedisUrl, uniquePrefix } from '../support/redis.ts'

const REQUESTS = 40
const GAME_ODDS_PARAMS: Array<[string, string]> = [
  ['region', 'england'],
  ['sport', 'soccer'],
  ['league', 'epl'],
  ['date', '2024-08-16'],
  ['homeTeam', 'Man United'],
  ['path', '$.data.homeMoneyLine'],
  ['times', '100'],
]

interface LoopbackCluster {
  url: string
  ports: number[]
  /** `redis-cli` against one node; its answer as text. */
  cli(port: number, ...args: string[]): string
  stop(): Promise<void>
}

/**
 * Three masters on free loopback ports, each a foreground redis-server of ours (so we own its PID),
 * joined by `redis-cli --cluster create`; stop() ends exactly these servers and removes their folder.
 */
async function startLoopbackCluster(): Promise<LoopbackCluster> {
  if (!redisServerInstalled())
    throw new Error(
      'redis-server is not installed: `apt-get install -y redis-server` (Debian; it brings redis-cli)',
    )
  const dir = mkdtempSync(join(tmpdir(), 'feedrunner-cluster-'))
  const servers: OwnedProcess[] = []
  const stop = async () => {
    for (const server of servers) await server.stop()
    rmSync(dir, { recursive: true, force: true })
  }
  try {
    const ports: number[] = []
    for (let index = 0; index < 3; index++) {
      const port = await freePort()
      const nodeDir = join(dir, String(port))
      mkdirSync(nodeDir)
      ports.push(port)
      servers.push(
        startOwnedProcess(`redis-server cluster node ${port}`, 'redis-server', [
          ...['--port', String(port), '--bind', '127.0.0.1', '--dir', nodeDir],
          ...['--cluster-enabled', 'yes', '--cluster-config-file', 'nodes.conf'],
          ...['--appendonly', 'no', '--save', ''],
        ]),
      )
    }
    const cli = (port: number, ...args: string[]) =>
      execFileSync('redis-cli', ['-h', '127.0.0.1', '-p', String(port), ...args], {
        encoding: 'utf8',
        timeout: 30_000,
      })
    for (const port of ports)
      await waitFor(`cluster node ${port}`, async () => cli(port, 'PING').trim() === 'PONG')
    execFileSync(
      'redis-cli',
      [
        '--cluster',
        'create',
        ...ports.map((port) => `127.0.0.1:${port}`),
        '--cluster-replicas',
        '0',
        '--cluster-yes',
      ],
      { encoding: 'utf8', timeout: 60_000 },
    )
    for (const port of ports)
      await waitFor(
        `cluster node ${port} to see the cluster ok`,
        async () => cli(port, 'CLUSTER', 'INFO').includes('cluster_state:ok'),
        30_000,
        100,
      )
    return {
      url: `redis+cluster://${ports.map((port) => `127.0.0.1:${port}`).join(',')}`,
      ports,
      cli,
      stop,
    }
  } catch (error) {
    await stop()
    throw error
  }
}

describe('redis+cluster:// URLs and the hash-tagged prefix', () => {
  it('reads every node, and credentials', () => {
    expect(clusterOfUrl('redis+cluster://127.0.0.1:7001,127.0.0.1:7002')).toEqual({
      nodes: [
        { host: '127.0.0.1', port: 7001 },
        { host: '127.0.0.1', port: 7002 },
      ],
      username: undefined,
      password: undefined,
    })
    expect(clusterOfUrl('redis+cluster://app:s%40cret@10.0.0.1:6379')).toMatchObject({
      nodes: [{ host: '10.0.0.1', port: 6379 }],
      username: 'app',
      password: 's@cret',
    })
    expect(clusterOfUrl('redis://127.0.0.1:6379')).toBeUndefined()
  })

  it('refuses a node without a port, naming REDIS_URL', () => {
    expect(() => clusterOfUrl('redis+cluster://127.0.0.1:7001,127.0.0.1')).toThrow(/^REDIS_URL:/)
  })

  it('defaults the prefix to a hash tag and refuses a cluster URL with an untagged prefix', () => {
    expect(parseSettings({}).QUEUE_PREFIX).toBe('{feedrunner}')
    const cluster = 'redis+cluster://127.0.0.1:7001'
    expect(parseSettings({ REDIS_URL: cluster }).QUEUE_PREFIX).toBe('{feedrunner}')
    expect(() => parseSettings({ REDIS_URL: cluster, QUEUE_PREFIX: 'mine' })).toThrow(SettingsError)
    expect(() => parseSettings({ REDIS_URL: cluster, QUEUE_PREFIX: 'mine' })).toThrow(
      /QUEUE_PREFIX: .*\{mine\}/,
    )
    expect(parseSettings({ REDIS_URL: cluster, QUEUE_PREFIX: '{mine}-b' }).QUEUE_PREFIX).toBe(
      '{mine}-b',
    )
  })
})

/**
 * BullMQ on a real three-master Redis Cluster: the adapter, the fetch worker and two runners, each a
 * process of its own, fulfil requests exactly once (read from the chain).
 */
describe('a real three-master Redis Cluster on loopback', () => {
  let cluster: LoopbackCluster | undefined
  let stack: DevStack | undefined
  const parts: PartProcess[] = []
  const prefix = `{test-cluster-${randomUUID().slice(0, 8)}}`

  beforeAll(async () => {
    cluster = await startLoopbackCluster()
    // The stack brings the chain, the contracts and the feed service; its own parts stay on the
    // shared test Redis and are closed: the processes below run every part on the cluster.
    stack = await startDevStack({
      env: { ...process.env, REDIS_URL: testRedisUrl(), LOG_LEVEL: 'warn', EA_PORT: '' },
      prefix: uniquePrefix('cluster'),
      runner: false,
    })
    await stack.adapter.close()
    await stack.workers.close()
    const env = { ...stack.env, REDIS_URL: cluster.url, QUEUE_PREFIX: prefix, LOG_LEVEL: 'warn' }
    for (const kind of ['adapter', 'worker', 'runner', 'runner'] as const)
      parts.push(await startPart(kind, env))
  }, 180_000)

  afterAll(async () => {
    for (const part of parts) await stopPart(part)
    await stack?.stop()
    await cluster?.stop()
  }, 60_000)

  it(`adapter, worker and two runners fulfil ${REQUESTS} requests exactly once`, async () => {
    const { consumer, provider, operator, deployer } = stack!.contracts
    const job = (await loadJobRegistry(stack!.settings.JOBS_DIR, 31337)).byName(
      'datafeed game-odds (uint256)',
    )!
    const nodeAddress = new Wallet(stack!.env.NODE_PRIVATE_KEY!).address
    const nonceBefore = await provider.getTransactionCount(nodeAddress)
    const fromBlock = await provider.getBlockNumber()
    const request: ConsumerRequest = {
      externalJobId: job.externalJobId,
      valueType: 'uint256',
      params: GAME_ODDS_PARAMS,
      payment: 0n,
    }
    const sent = await sendConsumerRequests(
      consumer,
      deployer,
      Array.from({ length: REQUESTS }, () => request),
    )
    const fulfilled = await waitForFulfilments(
      consumer,
      provider,
      sent.map((item) => item.requestId),
      { fromBlock, timeoutMs: 180_000 },
    )
    expect(fulfilled.size).toBe(REQUESTS)
    for (const fulfilment of fulfilled.values()) expect(fulfilment.value).toBe(160n)
    // Exactly once on chain: one OracleResponse per request and one transaction per fulfilment.
    const responses = await provider.getLogs({
      address: await operator.getAddress(),
      topics: [operator.interface.getEvent('OracleResponse')!.topicHash],
      fromBlock,
    })
    const ours = new Set(sent.map((item) => item.requestId))
    const responded = responses.map((log) => log.topics[1]!).filter((id) => ours.has(id))
    expect(responded).toHaveLength(REQUESTS)
    expect(new Set(responded).size).toBe(REQUESTS)
    expect((await provider.getTransactionCount(nodeAddress)) - nonceBefore).toBe(REQUESTS)

    // The runs were recorded in the cluster, under the hash-tagged prefix, and all in one slot.
    const redis = createRedisConnection(cluster!.url, 'worker')
    try {
      const runs = new RunStore(redis, `${prefix}:runner`, 31337)
      await waitFor(
        'every run to be recorded as fulfilled',
        async () =>
          (await Promise.all(sent.map((item) => runs.get(item.requestId)))).every(
            (run) => run?.state === 'fulfilled',
          ),
        60_000,
        200,
      )
      // Only this test writes to the cluster: every key it holds is in the prefix's slot. The parts
      // still write while this reads (a reconciler pass, a lock), so each key is checked by its slot
      // rather than two counts taken at different moments compared.
      const { ports, cli } = cluster!
      const slot = cli(ports[0]!, 'CLUSTER', 'KEYSLOT', prefix).trim()
      const keys = ports.flatMap((port) =>
        cli(port, '--scan')
          .split('\n')
          .filter((key) => key.length > 0),
      )
      expect(keys.length).toBeGreaterThan(0)
      const outside = keys.filter(
        (key) => cli(ports[0]!, 'CLUSTER', 'KEYSLOT', key).trim() !== slot,
      )
      expect(outside).toEqual([])

      // `status` and `runs show <prefix>` list the keys on whichever master holds them. The prefix's
      // slot is on one of three masters and ioredis sends a keyless SCAN to a master it picks at
      // random, so each listing is read several times and must be whole every time: a single-node
      // SCAN (the old code) passes 5 looks at both queue patterns with chance 1 in 3^10, and the 80
      // lookups by prefix with chance 1 in 3^80.
      // The sender key's lease (one runner owns it) is in the prefix's slot with the rest.
      const leases = ports
        .flatMap((port) =>
          cli(port, '--scan', '--pattern', `${prefix}:txstate:*:owner`).split('\n'),
        )
        .filter((key) => key.length > 0)
      expect(leases).toContain(`${prefix}:txstate:31337:${nodeAddress.toLowerCase()}:owner`)
      for (let look = 0; look < 5; look++) {
        const report = await readStatus(redis, prefix)
        expect(report.queues.map((queue) => queue.queue)).toEqual(
          expect.arrayContaining(['requests-31337']),
        )
        expect(report.runs).toHaveLength(20)
        for (const run of report.runs) expect(ours.has(run.requestId)).toBe(true)
      }
      const anyChain = new RunStore(redis, `${prefix}:runner`)
      for (const { requestId } of sent) {
        expect(await runs.findByPrefix(requestId.slice(2, 12))).toEqual([requestId])
        expect(await anyChain.findByPrefix(requestId.slice(0, 12))).toEqual([`31337:${requestId}`])
      }
    } finally {
      redis.disconnect()
    }
  }, 240_000)

  it('scanKeys finds keys on every master, from a connection not ready yet', async () => {
    const { ports, cli } = cluster!
    // 30 hash tags spread over the three masters' slots: a listing needs every node.
    const base = `scan-${randomUUID().slice(0, 8)}`
    const keys = Array.from({ length: 30 }, (_, index) => `${base}:{${index}}`)
    const redis = createRedisConnection(cluster!.url, 'worker')
    try {
      for (const key of keys) await redis.set(key, '1')
      const perNode = ports.map(
        (port) => cli(port, '--scan', '--pattern', `${base}:*`).split('\n').filter(Boolean).length,
      )
      expect(perNode.every((count) => count > 0 && count < keys.length)).toBe(true)
      const fresh = createRedisConnection(cluster!.url, 'worker')
      try {
        expect((await scanKeys(fresh, `${base}:*`, { count: 5 })).sort()).toEqual([...keys].sort())
        expect(await scanKeys(fresh, `${base}:*`, { limit: 4 })).toHaveLength(4)
      } finally {
        fresh.disconnect()
      }
    } finally {
      for (const key of keys) await redis.del(key)
      redis.disconnect()
    }
  })

  it('the eviction watch reads every master, and names the one that may evict', async () => {
    const { ports, cli } = cluster!
    const warned: string[] = []
    const log = {
      warn: (_fields: object, message: string) => void warned.push(message),
      info: () => undefined,
    }
    const fresh = createRedisConnection(cluster!.url, 'worker')
    cli(ports[1]!, 'CONFIG', 'SET', 'maxmemory', '1gb')
    cli(ports[1]!, 'CONFIG', 'SET', 'maxmemory-policy', 'allkeys-lru')
    try {
      await new RedisEvictionWatch(fresh, { redisUrl: cluster!.url, log }).check()
      expect(warned).toHaveLength(1)
      expect(warned[0]).toMatch(
        new RegExp(
          `^Redis node [\\d.]+:${ports[1]} of REDIS_URL evicts keys when its memory is full \\(maxmemory 1\\.00G, maxmemory-policy allkeys-lru\\)`,
        ),
      )
    } finally {
      cli(ports[1]!, 'CONFIG', 'SET', 'maxmemory-policy', 'noeviction')
      cli(ports[1]!, 'CONFIG', 'SET', 'maxmemory', '0')
      fresh.disconnect()
    }
  })
})
