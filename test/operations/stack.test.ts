import { existsSync, cpSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { DestinationStream } from 'pino'
import { chromium, type BrowserContext } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createLogger } from '../../src/config/logger.ts'
import { parseSettings, secretValues } from '../../src/config/settings.ts'
import { ANVIL_PRIVATE_KEYS } from '../../src/dev/anvil.ts'
import { waitFor } from '../../src/dev/process.ts'
import { sendConsumerRequests, type ConsumerRequest } from '../../src/dev/requests.ts'
import { startDevStack, type DevStack } from '../../src/dev/stack.ts'
import {
  startOperationsServer,
  type HealthReport,
  type OperationsServer,
} from '../../src/health/index.ts'
import { FINAL_RUN_STATES, type RunRecord } from '../../src/runner/run-record.ts'
import { testRedisUrl, uniquePrefix } from '../support/redis.ts'
import { parsePrometheus, valueOf, type Sample } from './support.ts'

const CHROMIUM = '/usr/bin/chromium'
const projectJobs = join(import.meta.dirname, '../../jobs')
const GAME_ODDS_JOB = 'datafeed game-odds (uint256)'
const REFUSING_JOB = 'ops-refuses-everyone'

function gameOdds(date: string): Array<[string, string]> {
  return [
    ['region', 'england'],
    ['sport', 'soccer'],
    ['league', 'epl'],
    ['date', date],
    ['homeTeam', 'Manchester United'],
    ['path', '$.data.homeMoneyLine'],
    ['times', '100'],
  ]
}

/** Every label a feedrunner metric may carry (plus the framework's default labels and histogram buckets). */
const ALLOWED_LABELS = new Set([
  // A runner's metrics by chain id (an RPC endpoint's `endpoint` is its place in the chain's list).
  'chain',
  'job',
  'state',
  'reason',
  'task_type',
  'outcome',
  'family',
  'endpoint',
  'status',
  'queue',
  'key',
  'le',
  'app_name',
  'app_version',
])

describe('operations on the dev stack: metrics, health, dashboard and logs of real requests', () => {
  let stack: DevStack
  let ops: OperationsServer
  let samples: Sample[]
  let metricsBody: string
  const lines: string[] = []
  const runs = new Map<string, RunRecord>()
  const sent: Record<'fulfilled' | 'errored' | 'refused', string> = {
    fulfilled: '',
    errored: '',
    refused: '',
  }
  const feedKey = `ops-feed-key-${Math.random().toString(36).slice(2, 12)}`
  const nodeKey = ANVIL_PRIVATE_KEYS[1] as string

  beforeAll(async () => {
    const jobsDir = mkdtempSync(join(tmpdir(), 'feedrunner-ops-jobs-'))
    cpSync(projectJobs, jobsDir, { recursive: true })
    // A copy of game-odds that admits only a requester that never asks: its requests are refused.
    const spec = readFileSync(join(projectJobs, 'game-odds.toml'), 'utf8')
      .replace(/^name = .*$/m, `name = "${REFUSING_JOB}"`)
      .replace(/^externalJobID = .*$/m, 'externalJobID = "0b7a1c4e-0000-4000-8000-0000000000aa"')
    writeFileSync(
      join(jobsDir, 'refusing.toml'),
      `requesters = ["0x000000000000000000000000000000000000dEaD"]\n${spec}`,
    )

    const env = {
      ...process.env,
      REDIS_URL: testRedisUrl(),
      JOBS_DIR: jobsDir,
      LOG_LEVEL: 'debug',
      EA_PORT: '',
      DASHBOARD_ENABLED: 'true',
      LOG_FORMAT: 'json',
    }
    const destination: DestinationStream = { write: (line: string) => void lines.push(line) }
    const logger = createLogger(
      parseSettings({ ...env, FEED_API_KEY: feedKey, NODE_PRIVATE_KEY: nodeKey }),
      'ops-test',
      destination,
    )
    stack = await startDevStack({
      env,
      prefix: uniquePrefix('ops'),
      feedKey,
      nodeKeys: [nodeKey],
      logger,
    })
    ops = await startOperationsServer({ port: 0, host: '127.0.0.1' })

    const registry = stack.runner!.registry
    const request = (job: string, date: string): ConsumerRequest => ({
      externalJobId: registry.byName(job)!.externalJobId,
      valueType: 'uint256',
      params: gameOdds(date),
      payment: 0n,
    })
    const [fulfilled, errored, refused] = await sendConsumerRequests(
      stack.contracts.consumer,
      stack.contracts.deployer,
      [
        request(GAME_ODDS_JOB, '2024-08-16'),
        // No game on that day: the feed service answers 404 and the run errors.
        request(GAME_ODDS_JOB, '2024-01-01'),
        request(REFUSING_JOB, '2024-08-16'),
      ],
    )
    Object.assign(sent, {
      fulfilled: fulfilled!.requestId,
      errored: errored!.requestId,
      refused: refused!.requestId,
    })
    for (const requestId of Object.values(sent)) {
      await waitFor(
        `run ${requestId} to end`,
        async () => {
          const run = await stack.runner!.runs.get(requestId)
          if (run && FINAL_RUN_STATES.includes(run.state)) runs.set(requestId, run)
          return runs.has(requestId)
        },
        30_000,
      )
    }
    metricsBody = await (await fetch(`${ops.url}/metrics`)).text()
    samples = parsePrometheus(metricsBody)
  }, 120_000)

  afterAll(async () => {
    await ops?.close()
    await stack?.stop()
  })

  it('ran the three requests to the states the test needs', () => {
    expect(runs.get(sent.fulfilled)?.state).toBe('fulfilled')
    expect(runs.get(sent.errored)?.state).toBe('errored')
    expect(runs.get(sent.refused)?.state).toBe('refused')
  })

  describe('metrics', () => {
    it('count requests by job, state and reason class', () => {
      expect(
        valueOf(samples, 'feedrunner_requests_total', { job: GAME_ODDS_JOB, state: 'received' }),
      ).toBeGreaterThanOrEqual(2)
      expect(
        valueOf(samples, 'feedrunner_requests_total', {
          job: GAME_ODDS_JOB,
          state: 'fulfilled',
          reason: 'none',
        }),
      ).toBe(1)
      expect(
        valueOf(samples, 'feedrunner_requests_total', {
          job: GAME_ODDS_JOB,
          state: 'errored',
          reason: 'fetch_failed',
        }),
      ).toBe(1)
      expect(
        valueOf(samples, 'feedrunner_requests_total', {
          job: REFUSING_JOB,
          state: 'refused',
          reason: 'requester_not_allowed',
        }),
      ).toBe(1)
    })

    it('time runs, tasks and fetches', () => {
      expect(
        valueOf(samples, 'feedrunner_run_duration_seconds_count', {
          job: GAME_ODDS_JOB,
          state: 'fulfilled',
        }),
      ).toBe(1)
      expect(
        valueOf(samples, 'feedrunner_run_duration_seconds_sum', {
          job: GAME_ODDS_JOB,
          state: 'fulfilled',
        }),
      ).toBeGreaterThan(0)
      expect(
        valueOf(samples, 'feedrunner_task_duration_seconds_count', {
          job: GAME_ODDS_JOB,
          task_type: 'bridge',
          outcome: 'ok',
        }),
      ).toBe(1)
      expect(
        valueOf(samples, 'feedrunner_task_duration_seconds_count', {
          job: GAME_ODDS_JOB,
          task_type: 'bridge',
          outcome: 'error',
        }),
      ).toBe(1)
      expect(
        valueOf(samples, 'feedrunner_task_duration_seconds_count', {
          job: GAME_ODDS_JOB,
          task_type: 'ethtx',
          outcome: 'ok',
        }),
      ).toBe(1)
      expect(
        valueOf(samples, 'feedrunner_fetch_duration_seconds_count', {
          family: 'sports',
          status: '200',
        }),
      ).toBeGreaterThanOrEqual(1)
      expect(
        valueOf(samples, 'feedrunner_adapter_requests_total', {
          endpoint: 'game-odds',
          status: '200',
        }),
      ).toBeGreaterThanOrEqual(1)
      expect(
        valueOf(samples, 'feedrunner_adapter_requests_total', {
          endpoint: 'game-odds',
          status: '404',
        }),
      ).toBeGreaterThanOrEqual(1)
      expect(
        valueOf(samples, 'feedrunner_adapter_request_duration_seconds_count', {
          endpoint: 'game-odds',
        }),
      ).toBeGreaterThanOrEqual(2)
      expect(
        valueOf(samples, 'feedrunner_fetch_errors_total', { family: 'sports', status: '404' }),
      ).toBeGreaterThanOrEqual(1)
    })

    it('read queue depths and waiting times, the sender per key index and the listener lag', () => {
      // A finished request leaves its run record, not a completed job (issue 20: Redis commands).
      expect(
        valueOf(samples, 'feedrunner_queue_jobs', { queue: 'requests', state: 'completed' }),
      ).toBe(0)
      expect(
        samples.some(
          (sample) => sample.name === 'feedrunner_queue_jobs' && sample.labels.queue === 'requests',
        ),
      ).toBe(true)
      expect(
        samples.some(
          (sample) =>
            sample.name === 'feedrunner_queue_jobs' && sample.labels.queue === 'fetch-sports',
        ),
      ).toBe(true)
      // The runner hands a fulfilment to its key's sender directly (issue 20): the key's queue, kept
      // for processes that only submit, is still reported, and no fulfilment went through it.
      expect(
        valueOf(samples, 'feedrunner_queue_jobs', { queue: 'tx-key0', state: 'completed' }),
      ).toBe(0)
      expect(
        valueOf(samples, 'feedrunner_queue_wait_seconds_count', { queue: 'requests' }),
      ).toBeGreaterThanOrEqual(3)
      expect(
        valueOf(samples, 'feedrunner_queue_wait_seconds_count', { queue: 'fetch-sports' }),
      ).toBeGreaterThanOrEqual(1)
      expect(
        valueOf(samples, 'feedrunner_queue_oldest_waiting_seconds', { queue: 'requests' }),
      ).toBe(0)
      expect(valueOf(samples, 'feedrunner_tx_sent_total', { key: '0' })).toBeGreaterThanOrEqual(1)
      expect(valueOf(samples, 'feedrunner_tx_next_nonce', { key: '0' })).toBeGreaterThanOrEqual(1)
      // anvil funds its keys with 10,000 ether; the fulfilments' gas comes out of that.
      expect(valueOf(samples, 'feedrunner_tx_key_balance_eth', { key: '0' })).toBeGreaterThan(9_000)
      expect(valueOf(samples, 'feedrunner_tx_key_balance_eth', { key: '0' })).toBeLessThan(10_000)
      const lag = samples.find((sample) => sample.name === 'feedrunner_listener_lag_blocks')
      expect(lag).toBeDefined()
      expect(lag!.value).toBeGreaterThanOrEqual(0)
      expect(lag!.value).toBeLessThan(10)
    })

    it('carry only bounded labels: no request id, no address, no secret', () => {
      const ours = samples.filter((sample) => sample.name.startsWith('feedrunner_'))
      expect(ours.length).toBeGreaterThan(20)
      for (const sample of ours) {
        for (const [name, value] of Object.entries(sample.labels)) {
          expect(ALLOWED_LABELS, `${sample.name} label ${name}`).toContain(name)
          expect(value, `${sample.name}{${name}}`).not.toMatch(/0x[0-9a-fA-F]{40}/)
          expect(value.length, `${sample.name}{${name}}`).toBeLessThanOrEqual(64)
        }
      }
      const jobs = new Set(ours.map((sample) => sample.labels.job).filter(Boolean))
      expect(
        [...jobs].every(
          (job) => stack.runner!.registry.byName(job!) !== undefined || job === '(unknown)',
        ),
      ).toBe(true)
      const text = metricsBody.toLowerCase()
      for (const requestId of Object.values(sent))
        expect(text).not.toContain(requestId.toLowerCase().slice(2))
      for (const secret of [feedKey, ...secretValues(stack.settings)])
        expect(text).not.toContain(secret.toLowerCase())
      for (const address of [stack.contracts.operator.target, stack.contracts.consumer.target])
        expect(text).not.toContain(String(address).toLowerCase().slice(2))
    })
  })

  describe("health on the adapter's server", () => {
    it("is ready and live with every part's checks", async () => {
      const ready = await fetch(`${stack.adapter.url}/ready`)
      const report = (await ready.json()) as HealthReport
      expect(ready.status).toBe(200)
      // A runner's checks are per chain: its endpoints and its pipeline worker.
      expect(Object.keys(report.checks).sort()).toEqual([
        'chain-31337',
        'fetch-workers',
        'pipeline-worker-31337',
        'redis',
      ])
      const live = (await (await fetch(`${stack.adapter.url}/live`)).json()) as HealthReport
      expect(Object.keys(live.checks).sort()).toEqual(['fetch-workers', 'pipeline-worker-31337'])
    })
  })

  describe('logs', () => {
    it('give every line about a run its request id and job', () => {
      const parsed = lines.map((line) => JSON.parse(line) as Record<string, unknown>)
      for (const [outcome, requestId] of Object.entries(sent)) {
        const about = parsed.filter((entry) =>
          JSON.stringify(entry).toLowerCase().includes(requestId.toLowerCase()),
        )
        expect(about.length, `${outcome} run's lines`).toBeGreaterThanOrEqual(2)
        for (const entry of about) {
          expect(String(entry.requestId).toLowerCase(), JSON.stringify(entry)).toBe(
            requestId.toLowerCase(),
          )
          expect(typeof entry.job, JSON.stringify(entry)).toBe('string')
        }
      }
      const fulfilledLines = parsed.filter(
        (entry) => String(entry.requestId).toLowerCase() === sent.fulfilled.toLowerCase(),
      )
      expect(fulfilledLines.map((entry) => entry.msg)).toEqual(
        expect.arrayContaining([
          'request received',
          'run started',
          'task finished',
          'run fulfilled',
        ]),
      )
      expect(fulfilledLines.every((entry) => entry.job === GAME_ODDS_JOB)).toBe(true)
    })

    it('hold no secret: the logger removes keys by field and by value', () => {
      const all = lines.join('')
      expect(lines.length).toBeGreaterThan(20)
      for (const secret of [feedKey, nodeKey, nodeKey.slice(2)]) expect(all).not.toContain(secret)
    })
  })

  describe('dashboard in headless Chromium', () => {
    let browser: BrowserContext

    beforeAll(async () => {
      if (!existsSync(CHROMIUM)) {
        throw new Error(
          `${CHROMIUM} is missing: the dashboard test drives Debian's chromium. Install it with \`sudo apt-get install -y chromium\` (.ci/run does this).`,
        )
      }
      browser = await chromium.launchPersistentContext(
        mkdtempSync(join(tmpdir(), 'feedrunner-chromium-')),
        {
          executablePath: CHROMIUM,
          args: [
            '--headless',
            '--no-sandbox',
            '--disable-gpu',
            '--disable-quic',
            '--no-first-run',
            '--disable-background-networking',
            '--disable-component-update',
            '--disable-sync',
          ],
        },
      )
    }, 60_000)

    afterAll(async () => {
      await browser?.close()
    })

    it('shows the queues in Bull Board, read-only', async () => {
      const page = await browser.newPage()
      const response = await page.goto(`${stack.adapter.url}/dashboard/queues`)
      expect(response?.status()).toBe(200)
      for (const queue of ['requests-31337', 'fetch-sports', 'fetch-weather'])
        await page.getByText(queue, { exact: true }).first().waitFor({ timeout: 15_000 })
      const txQueue = stack.runner!.sender!.queueNames[0]!
      await page.getByText(txQueue, { exact: true }).first().waitFor({ timeout: 15_000 })
      // Read-only: Bull Board's API refuses actions on jobs.
      const action = await fetch(
        `${stack.adapter.url}/dashboard/queues/api/queues/requests-31337/pause`,
        { method: 'PUT' },
      )
      expect(action.status).toBeGreaterThanOrEqual(400)
      await page.close()
    }, 30_000)

    it('shows the fulfilled run with its job and transaction, and the refused one with its reason', async () => {
      const page = await browser.newPage()
      const response = await page.goto(`${stack.adapter.url}/dashboard`)
      expect(response?.status()).toBe(200)
      expect(response?.headers()['content-type']).toContain('text/html')
      const fulfilled = page.locator(`tr.run[data-request-id="${sent.fulfilled.toLowerCase()}"]`)
      await fulfilled.waitFor({ timeout: 10_000 })
      expect(await fulfilled.locator('td.state').textContent()).toBe('fulfilled')
      const text = await fulfilled.textContent()
      expect(text).toContain(GAME_ODDS_JOB)
      expect(text).toContain(runs.get(sent.fulfilled)!.txHash!.slice(0, 10))
      const refused = page.locator(`tr.run[data-request-id="${sent.refused.toLowerCase()}"]`)
      expect(await refused.textContent()).toContain("is not in the job's requesters")
      expect(await page.locator('#queues').textContent()).toContain('fetch-sports')
      await page.close()
    }, 30_000)
  })
})
