import { mkdtempSync, readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Wallet } from 'ethers'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startFeedrunnerProcess, type FeedrunnerProcess } from '../../src/dev/feedrunner-process.ts'
import { freePort } from '../../src/dev/ports.ts'
import { waitFor } from '../../src/dev/process.ts'
import { startPrivateRedis, type PrivateRedis } from '../../src/dev/redis.ts'
import { waitForFulfilments, type ConsumerRequest } from '../../src/dev/requests.ts'
import { startDevStack, type DevStack } from '../../src/dev/stack.ts'
import { loadJobRegistry } from '../../src/runner/job-registry.ts'
import { createRedisConnection } from '../../src/queue/connection.ts'
import { uniquePrefix, untilReady } from '../support/redis.ts'
import {
  onChainFulfilments,
  recordFigures,
  sendPaced,
  startPart,
  stopPart,
  type PartProcess,
} from './support.ts'
import { jsonLogLines } from '../support/log-lines.ts'

const FEED_KEY = 'outage-lines-feed-key-5d1e'
const PER_SECOND = 2
/** Requests sent across each outage: before it, during it and after it. */
const REQUESTS = 40

/**
 * Each dependency stops answering in turn while requests flow through the processes of a production
 * node (runner, adapter, fetch worker, each a process of its own): the feed service, the adapter (the
 * runner's bridge), Redis. Each process says so in at most three lines (down, maybe one "still down",
 * back) that name the dependency's setting, not once per failed call; every request is fulfilled
 * exactly once, as the chain tells.
 */
describe('outages read as one line, in every process', () => {
  let redis: PrivateRedis
  let stack: DevStack
  let feeds: FeedrunnerProcess
  let requests: ConsumerRequest[]
  const parts: Record<'runner' | 'adapter' | 'worker', PartProcess | undefined> = {
    runner: undefined,
    adapter: undefined,
    worker: undefined,
  }
  let feedPort: number
  let adapterPort: number
  let partEnv: Record<string, string>
  const persistDir = mkdtempSync(join(tmpdir(), 'outage-lines-'))

  const startFeeds = () =>
    startFeedrunnerProcess({
      name: 'feedrunner feeds serve',
      args: ['feeds', 'serve', '--port', String(feedPort), '--keys', FEED_KEY],
      env: {},
      ready: 'feed service listening',
    })
  const startAdapter = async () =>
    (parts.adapter = await startPart('adapter', { ...partEnv, EA_PORT: String(adapterPort) }))

  beforeAll(async () => {
    redis = await startPrivateRedis({ persistDir })
    stack = await startDevStack({
      env: { ...process.env, REDIS_URL: redis.url, LOG_LEVEL: 'fatal', EA_PORT: '' },
      prefix: uniquePrefix('outage-stack'),
      runner: false,
    })
    feedPort = await freePort()
    adapterPort = await freePort()
    feeds = await startFeeds()
    partEnv = {
      REDIS_URL: redis.url,
      QUEUE_PREFIX: uniquePrefix('outage-lines'),
      SPORTS_URL: `http://127.0.0.1:${feedPort}`,
      FEED_API_KEY: FEED_KEY,
      // Every request fetches: the framework's shortest cache.
      CACHE_MAX_AGE: '1000',
      RPC_URL: stack.env.RPC_URL!,
      NODE_PRIVATE_KEY: stack.env.NODE_PRIVATE_KEY!,
      JOBS_DIR: stack.env.JOBS_DIR!,
      BRIDGE_DATAFEED_URL: `http://127.0.0.1:${adapterPort}`,
      RUNNER_FROM_BLOCK: String(await stack.contracts.provider.getBlockNumber()),
      CHAIN_POLL_INTERVAL_MS: '100',
      REQUESTER_MAX_CONCURRENT_RUNS: '0',
      REQUESTER_MAX_REQUESTS_PER_MINUTE: '0',
      LOG_LEVEL: 'info',
      LOG_FORMAT: 'json',
    }
    await startAdapter()
    parts.worker = await startPart('worker', partEnv)
    parts.runner = await startPart('runner', partEnv)
    const registry = await loadJobRegistry(stack.settings.JOBS_DIR, 31337)
    const gameOdds = registry.byName('datafeed game-odds (uint256)')!
    const games = (
      JSON.parse(
        readFileSync(join(import.meta.dirname, '../../src/feeds/server/data/sports.json'), 'utf8'),
      ) as { games: Array<{ league: string; date: string; homeTeam: string }> }
    ).games.filter((game) => game.league === 'epl')
    requests = Array.from({ length: REQUESTS }, (_, index) => {
      const game = games[index % games.length]!
      return {
        externalJobId: gameOdds.externalJobId,
        valueType: 'uint256',
        params: [
          ['region', 'england'],
          ['sport', 'soccer'],
          ['league', 'epl'],
          ['date', game.date],
          ['homeTeam', game.homeTeam],
          ['path', '$.data.homeMoneyLine'],
          ['times', '100'],
        ],
        payment:
          (gameOdds.job.spec.type === 'directrequest'
            ? gameOdds.job.spec.minContractPaymentLinkJuels
            : undefined) ?? 0n,
      }
    })
  }, 240_000)

  afterAll(async () => {
    for (const part of Object.values(parts)) await stopPart(part)
    await feeds?.stop()
    await stack?.stop()
    await redis?.stop()
  }, 60_000)

  /** Sends the requests at PER_SECOND; `outage` starts 3 s in and resolves when the dependency is back. */
  async function throughOutage(name: string, outage: () => Promise<void>): Promise<void> {
    const { consumer, provider } = stack.contracts
    const nodeKey = stack.env.NODE_PRIVATE_KEY!
    const nonceBefore = await provider.getTransactionCount(new Wallet(nodeKey).address)
    const fromBlock = (await provider.getBlockNumber()) + 1
    const outputBefore = Object.fromEntries(
      Object.entries(parts).map(([kind, part]) => [kind, part?.output().length ?? 0]),
    )
    const during = (async () => {
      await new Promise((resolve) => setTimeout(resolve, 3_000))
      await outage()
    })()
    const sent = await sendPaced(stack, requests, PER_SECOND)
    await during
    const fulfilled = await waitForFulfilments(
      consumer,
      provider,
      sent.map((request) => request.requestId),
      { fromBlock, timeoutMs: 240_000 },
    )
    const loudNow = () =>
      Object.entries(parts).map(
        ([kind, part]) => `${kind}: ${(part?.output() ?? '').slice(-3_000)}`,
      )
    expect(fulfilled.size, loudNow().join('\n')).toBe(REQUESTS)
    const chain = await onChainFulfilments(stack, fromBlock, nodeKey, nonceBefore)
    expect(chain.uniqueResponses).toBe(REQUESTS)
    expect(chain.responses).toBe(REQUESTS)
    // A restarted part's output is all from this outage.
    const linesOf = (kind: string, part: PartProcess | undefined) => {
      const since = part && part.output().length >= outputBefore[kind]! ? outputBefore[kind]! : 0
      return jsonLogLines(part?.output().slice(since) ?? '')
    }
    // Each process's back line too, before its lines are counted: one that comes after the last
    // fulfilment (a probe's three passes) would otherwise be counted in the next outage's lines.
    await waitFor(
      'each process that said a dependency was down to say it is back',
      async () =>
        Object.entries(parts).every(([kind, part]) => {
          const last = new Map<unknown, unknown>()
          for (const line of linesOf(kind, part))
            if (line.dependency !== undefined) last.set(line.setting, line.state)
          return [...last.values()].every((state) => state === 'up')
        }),
      60_000,
    )
    const loud: Record<string, string[]> = {}
    for (const [kind, part] of Object.entries(parts))
      loud[kind] = linesOf(kind, part)
        .filter((line) => (line.level ?? 0) >= 40 || line.dependency !== undefined)
        .map((line) => line.msg ?? JSON.stringify(line).slice(0, 400))
    recordFigures(`outage-lines-${name}`, {
      requests: REQUESTS,
      oracleResponses: chain.responses,
      loudLines: Object.fromEntries(Object.entries(loud).map(([kind, l]) => [kind, l.length])),
    })
    // Every process's lines at once, whole, so a failure shows them all.
    expect(
      Object.entries(loud)
        .filter(([, lines]) => lines.length > 3)
        .map(([kind, lines]) => `${kind}: ${lines.join(' | ')}`),
    ).toEqual([])
  }

  it('the feed service away for 15 s: the worker says so (SPORTS_URL), nothing is lost', async () => {
    await throughOutage('feed-service', async () => {
      await feeds.stop()
      await new Promise((resolve) => setTimeout(resolve, 15_000))
      feeds = await startFeeds()
    })
    const said = jsonLogLines(parts.worker!.output()).filter(
      (line) => line.setting === 'SPORTS_URL',
    )
    expect(said.map((line) => line.state)).toContain('down')
  }, 420_000)

  it('the adapter away for 15 s: the runner says so (BRIDGE_DATAFEED_URL), nothing is lost', async () => {
    await throughOutage('bridge', async () => {
      await stopPart(parts.adapter)
      await new Promise((resolve) => setTimeout(resolve, 15_000))
      await startAdapter()
    })
    const said = jsonLogLines(parts.runner!.output()).filter(
      (line) => line.setting === 'BRIDGE_DATAFEED_URL',
    )
    expect(said.map((line) => line.state)).toContain('down')
  }, 420_000)

  it('Redis away for 30 s: each process says so (REDIS_URL), nothing is lost', async () => {
    await throughOutage('redis', async () => {
      const port = redis.port
      await redis.stop()
      await new Promise((resolve) => setTimeout(resolve, 30_000))
      redis = await startPrivateRedis({ port, persistDir })
    })
    for (const part of Object.values(parts))
      expect(
        jsonLogLines(part!.output())
          .filter((line) => line.setting === 'REDIS_URL')
          .map((line) => line.state),
      ).toContain('down')
  }, 420_000)

  it('Redis full for 20 s (noeviction at its maxmemory): each process says so, nothing is lost', async () => {
    const admin = createRedisConnection(redis.url, 'client')
    try {
      await untilReady(admin)
      await throughOutage('redis-full', async () => {
        // Every write refused (OOM) while every connection stays up.
        await admin.config('SET', 'maxmemory', '1')
        await new Promise((resolve) => setTimeout(resolve, 20_000))
        await admin.config('SET', 'maxmemory', '0')
      })
    } finally {
      await admin.config('SET', 'maxmemory', '0').catch(() => undefined)
      admin.disconnect()
    }
    // The process's whole output: this outage's down line is its last (its back line is waited for).
    const down = jsonLogLines(parts.runner!.output())
      .filter((line) => line.setting === 'REDIS_URL' && line.state === 'down')
      .at(-1)
    expect(down?.reason).toMatch(/^OOM command not allowed/)
  }, 420_000)
})
