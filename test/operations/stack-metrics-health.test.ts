import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { secretValues } from '../../src/config/secrets.ts'
import type { DevStack } from '../../src/dev/stack.ts'
import type { HealthReport } from '../../src/health/index.ts'
import type { RunRecord } from '../../src/runner/run-record.ts'
import {
  GAME_ODDS_JOB,
  REFUSING_JOB,
  startOperationsStack,
  type OperationsStack,
  type SentRequests,
} from './stack-support.ts'
import { valueOf, type Sample } from './support.ts'

/** Every label a feedrunner metric may carry (plus the framework's default labels and histogram buckets). */
const ALLOWED_LABELS = new Set([
  // A runner's metrics by chain id (an RPC endpoint's `endpoint` is its place in the chain's list).
  'chain',
  // What started a run: request, tick or call.
  'trigger',
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

// The logs and the dashboard of such a stack: stack-logs-dashboard.test.ts.
describe('operations on the dev stack: metrics, health, dashboard and logs of real requests', () => {
  let operations: OperationsStack | undefined
  let stack: DevStack
  let samples: Sample[]
  let metricsBody: string
  let runs: Map<string, RunRecord>
  let sent: SentRequests
  let feedKey: string

  beforeAll(async () => {
    operations = await startOperationsStack()
    ;({ stack, samples, metricsBody, runs, sent, feedKey } = operations)
  }, 120_000)

  afterAll(async () => {
    await operations?.stop()
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
})
