import { cpSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Contract, getAddress } from 'ethers'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { fluxAggregatorInterface, readAggregator } from '../../src/chain/flux/aggregator.ts'
import { createLogger } from '../../src/config/logger.ts'
import { parseSettings } from '../../src/config/settings.ts'
import { runPushChecks } from '../../src/dev/push-demo.ts'
import {
  DEV_PUSH_ADDRESSES,
  DEV_PUSH_FEEDS,
  PUSH_DEPLOYER_ADDRESS,
} from '../../src/dev/push-feeds.ts'
import { PUSHED_VALUE } from '../../src/dev/pushed-value.ts'
import { waitFor } from '../../src/dev/process.ts'
import { startDevStack, type DevStack } from '../../src/dev/stack.ts'
import { writeDevState } from '../../src/dev/state.ts'
import { runFeedrunner } from '../e2e/support/cli.ts'
import { testRedisUrl, uniquePrefix } from '../support/redis.ts'

const projectRoot = join(import.meta.dirname, '../..')
const quiet = createLogger(parseSettings({ LOG_LEVEL: 'fatal' }), 'push-demo-test')
/** The shipped data set's floor prices (ETH) of the three collections, times 100. */
const FLOORS = { cron: 950n, webhook: 1400n, fluxmonitor: 4800n }

function stackEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  // JOBS_DIR and RUNS_API_TOKEN unset: the stack's own (jobs,jobs/push and a random token).
  return {
    ...process.env,
    REDIS_URL: testRedisUrl(),
    LOG_LEVEL: 'warn',
    EA_PORT: '',
    JOBS_DIR: '',
    RUNS_API_TOKEN: '',
    ...extra,
  }
}

/** `npm start` and `feedrunner demo` run the push jobs of jobs/push/ on contracts the stack deploys. */
describe('the dev stack with its push jobs', () => {
  let stack: DevStack

  beforeAll(async () => {
    stack = await startDevStack({
      env: stackEnv(),
      prefix: uniquePrefix('push-demo'),
      pushJobs: true,
      logger: quiet,
    })
  }, 240_000)

  afterAll(async () => {
    await stack?.stop()
  })

  it('deploys the push contracts at the addresses jobs/push names and serves the push jobs', async () => {
    expect(stack.pushContracts).toMatchObject({ ...DEV_PUSH_ADDRESSES, reused: false })
    const served = stack.runner!.allJobs.jobs.map((job) => job.externalJobId)
    for (const feed of DEV_PUSH_FEEDS) expect(served).toContain(feed.externalJobId)
    const aggregator = await readAggregator(stack.contracts.provider, DEV_PUSH_ADDRESSES.aggregator)
    expect(aggregator.oracles.map((oracle) => oracle.address)).toEqual([
      getAddress(stack.contracts.addresses.nodes[0]!),
    ])
    expect(aggregator.owner).toBe(PUSH_DEPLOYER_ADDRESS)
  })

  it("the demo's push checks pass, each value the one the chain holds and the feed service's floor × 100", async () => {
    const checks = await runPushChecks(stack, 90_000)
    expect(
      checks.map((check) => [check.feed.type, check.actual, check.ok]),
      checks.map((check) => check.checked).join('\n'),
    ).toEqual([
      ['cron', FLOORS.cron, true],
      ['webhook', FLOORS.webhook, true],
      ['fluxmonitor', FLOORS.fluxmonitor, true],
    ])
    // The chain, read here: each PushedValue's writes and the aggregator's answer and submitter.
    const { provider } = stack.contracts
    const node = getAddress(stack.contracts.addresses.nodes[0]!)
    for (const feed of ['cron', 'webhook'] as const) {
      const logs = await provider.getLogs({
        address: DEV_PUSH_ADDRESSES[feed],
        topics: [PUSHED_VALUE.getEvent('ValuePushed')!.topicHash],
        fromBlock: 0,
      })
      expect(logs.length, feed).toBeGreaterThan(0)
      for (const log of logs) {
        expect(PUSHED_VALUE.parseLog(log)!.args.answer, feed).toBe(FLOORS[feed])
        expect(getAddress((await provider.getTransaction(log.transactionHash))!.from)).toBe(node)
      }
      const pushed = new Contract(DEV_PUSH_ADDRESSES[feed], PUSHED_VALUE, provider)
      const [, answer] = (await pushed.getFunction('latestRoundData')()) as bigint[]
      expect(answer, feed).toBe(FLOORS[feed])
    }
    const submissions = await provider.getLogs({
      address: DEV_PUSH_ADDRESSES.aggregator,
      topics: [fluxAggregatorInterface.getEvent('SubmissionReceived')!.topicHash],
      fromBlock: 0,
    })
    expect(submissions.length).toBeGreaterThan(0)
    for (const log of submissions) {
      const { submission, oracle } = fluxAggregatorInterface.parseLog(log)!.args
      expect([submission, getAddress(oracle as string)]).toEqual([FLOORS.fluxmonitor, node])
    }
  }, 120_000)

  it('status shows each push feed: the PushedValues read from the chain, the aggregator from the runner', async () => {
    const stateDir = mkdtempSync(join(tmpdir(), 'feedrunner-push-status-'))
    try {
      const stateFile = join(stateDir, 'dev.json')
      // What `feedrunner dev` records; the stack runs in this process.
      writeDevState(stateFile, {
        pid: process.pid,
        startedAt: new Date().toISOString(),
        redisUrl: stack.redisUrl,
        queuePrefix: stack.settings.QUEUE_PREFIX,
        rpcUrl: stack.rpcUrl,
        chainId: 31337,
        jobsDir: stack.settings.JOBS_DIR,
        adapterUrl: stack.adapter.url,
        feedServiceUrl: stack.feedServer.url,
        metricsUrl: stack.metricsUrl,
        healthUrl: stack.healthUrl,
        pushedValues: [
          { job: 'the cron feed', address: DEV_PUSH_ADDRESSES.cron },
          { job: 'the webhook feed', address: DEV_PUSH_ADDRESSES.webhook },
        ],
        contracts: stack.contracts.addresses,
      })
      const env = { DEV_STATE_FILE: stateFile, REDIS_URL: '', QUEUE_PREFIX: '' }
      let status = await runFeedrunner(['status'], env, 60_000, projectRoot)
      const row = (text: string) => status.stdout.split('\n').find((line) => line.includes(text))
      // The runner writes its flux feeds for status every 5 s, each as its monitor last saw it.
      await waitFor(
        'the flux feed and its answer in status',
        async () => {
          status = await runFeedrunner(['status'], env, 60_000, projectRoot)
          return /\s4800\s/.test(row(DEV_PUSH_ADDRESSES.aggregator) ?? '')
        },
        60_000,
        1_000,
      ).catch(() => undefined)
      expect(row('the cron feed'), status.stdout).toMatch(
        new RegExp(`${DEV_PUSH_ADDRESSES.cron}\\s+\\d+\\s+950\\s+\\d\\d:\\d\\d:\\d\\d`),
      )
      expect(row('the webhook feed')).toMatch(
        new RegExp(`${DEV_PUSH_ADDRESSES.webhook}\\s+1\\s+1400\\s`),
      )
      expect(row(DEV_PUSH_ADDRESSES.aggregator)).toMatch(/\s\d+\s+4800\s/)
      const json = await runFeedrunner(['status', '--json'], env, 60_000, projectRoot)
      const { pushed } = JSON.parse(json.stdout) as { pushed: Array<{ answer: string }> }
      expect(pushed.map((feed) => feed.answer)).toEqual(['950', '1400'])
    } finally {
      rmSync(stateDir, { recursive: true, force: true })
    }
  }, 120_000)

  it('a second stack on the same chain takes the push contracts as they are', async () => {
    const { provider } = stack.contracts
    const sentBefore = await provider.getTransactionCount(PUSH_DEPLOYER_ADDRESS)
    const second = await startDevStack({
      env: stackEnv({ RPC_URL: stack.rpcUrl }),
      prefix: uniquePrefix('push-demo-again'),
      pushJobs: true,
      runner: false,
      logger: quiet,
    })
    try {
      expect(second.pushContracts).toMatchObject({ ...DEV_PUSH_ADDRESSES, reused: true })
      expect(await provider.getTransactionCount(PUSH_DEPLOYER_ADDRESS)).toBe(sentBefore)
    } finally {
      await second.stop()
    }
  }, 120_000)
})

describe('feedrunner demo when a push job does not write', () => {
  const pushWithoutCron = mkdtempSync(join(tmpdir(), 'feedrunner-push-without-cron-'))
  afterAll(() => rmSync(pushWithoutCron, { recursive: true, force: true }))

  it('says which, from the chain, and exits non-zero', async () => {
    const cron = DEV_PUSH_FEEDS.find((feed) => feed.type === 'cron')!
    cpSync(join(projectRoot, 'jobs/push'), pushWithoutCron, {
      recursive: true,
      filter: (source) => !source.endsWith(cron.file),
    })
    const demo = await runFeedrunner(
      ['demo', '--timeout', '45'],
      {
        REDIS_URL: testRedisUrl(),
        QUEUE_PREFIX: uniquePrefix('push-demo-cli'),
        JOBS_DIR: `${join(projectRoot, 'jobs')},${pushWithoutCron}`,
      },
      240_000,
      projectRoot,
    )
    const lines = demo.stdout.split('\n').map((text) => text.trimEnd())
    const line = (job: string) => lines.find((text) => text.includes(job)) ?? ''
    expect(line(`jobs/push/${cron.file} (not loaded)`)).toMatch(
      new RegExp(
        `cron .*\\(nothing\\).*no round written to ${DEV_PUSH_ADDRESSES.cron} in the 45 s after round 0 \\(no job the runner serves has externalJobID ${cron.externalJobId}.*FAILED$`,
      ),
    )
    expect(line('(webhook)')).toMatch(
      new RegExp(`1400 .*getRoundData\\(1\\) at ${DEV_PUSH_ADDRESSES.webhook}: the call,.* ok$`),
    )
    expect(line('(fluxmonitor)')).toMatch(
      new RegExp(`4800 .*latestRoundData\\(\\) at ${DEV_PUSH_ADDRESSES.aggregator}.* ok$`),
    )
    expect(demo.stdout).toMatch(/(\d+) of \1 requests fulfilled with the expected value/)
    expect(demo.stdout).toContain('2 of 3 push jobs wrote the expected value on chain')
    expect(demo.code, demo.stdout + demo.stderr).toBe(1)
  }, 260_000)
})
