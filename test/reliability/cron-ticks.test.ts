import { existsSync, mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { waitFor } from '../../src/dev/process.ts'
import { startDevStack, type DevStack } from '../../src/dev/stack.ts'
import { createRedisConnection } from '../../src/queue/connection.ts'
import { RunStore } from '../../src/runner/run-record.ts'
import { tickRunId } from '../../src/runner/ticks.ts'
import { testRedisUrl, uniquePrefix } from '../support/redis.ts'
import {
  LIBFAKETIME,
  startPart,
  stopPart,
  tickWriterJob,
  ticksWritten,
  type PartProcess,
} from './support.ts'

const EVERY_MS = 2_000
const TICKS = 12
const EXTERNAL_JOB_ID = '6c1f0e2a-9b7d-4c3e-8a51-2f4d6e8b0c11'

/**
 * A cron job `@every 2s` served by two runner processes sharing one Redis, then by what is left once
 * one is SIGKILLed and a third, its wall clock 120 s ahead, joins: every tick reaches the chain once
 * (read from PushedValue's logs), none twice, none between the first and the last missing; each has
 * its run record (trigger tick).
 */
describe('cron ticks: once across every runner sharing the Redis', () => {
  let stack: DevStack
  let pushed: string
  const runners: PartProcess[] = []
  let env: Record<string, string> = {}

  beforeAll(async () => {
    const jobsDir = mkdtempSync(join(tmpdir(), 'feedrunner-cron-'))
    stack = await startDevStack({
      env: { ...process.env, REDIS_URL: testRedisUrl(), LOG_LEVEL: 'warn', EA_PORT: '' },
      prefix: uniquePrefix('rel-cron'),
      runner: false,
    })
    pushed = await tickWriterJob(stack, jobsDir, EXTERNAL_JOB_ID)
    env = { ...stack.env, JOBS_DIR: jobsDir, RUNNER_LOCK_MS: '3000', LOG_LEVEL: 'info' }
    // Started together: a runner's first start waits for the node's pool to drain of the senders'
    // transactions (a listener without a checkpoint), which another runner's ticks keep filling.
    runners.push(...(await Promise.all([0, 1].map(() => startPart('runner', env, 240_000)))))
  }, 600_000)

  afterAll(async () => {
    for (const runner of runners) await stopPart(runner)
    await stack?.stop()
  })

  const ticksOnChain = () => ticksWritten(stack.contracts.provider, pushed)

  /** Until `count` ticks are on chain (runners' output in the error when they never come). */
  async function untilTicks(count: number, boundMs = 180_000): Promise<void> {
    await waitFor(
      `${count} ticks on chain`,
      async () => (await ticksOnChain()).length >= count,
      boundMs,
      500,
    ).catch(async (error: unknown) => {
      const seen = await ticksOnChain()
      throw new Error(
        `${(error as Error).message}: ${seen.length} on chain; the runners said:\n${runners.map((runner) => runner.output().slice(-3_000)).join('\n---\n')}`,
      )
    })
  }

  /**
   * Every tick claimed so far (Redis's record of them): each a multiple of the period, none missing
   * between the first and the last; once their runs are fulfilled (trigger tick), each is on chain
   * exactly once, and no tick on chain is one nobody claimed.
   */
  async function expectEveryTickOnce(): Promise<number[]> {
    const redis = createRedisConnection(stack.redisUrl, 'worker')
    const store = new RunStore(
      redis,
      `${stack.settings.QUEUE_PREFIX}:runner`,
      stack.contracts.chainId,
    )
    const runOf = (tick: number) => store.get(tickRunId(EXTERNAL_JOB_ID, tick))
    try {
      const claimsKey = `${stack.settings.QUEUE_PREFIX}:cron:${stack.contracts.chainId}:${EXTERNAL_JOB_ID}:ticks`
      const claimed = (await redis.zrange(claimsKey, 0, -1)).map(Number)
      for (const tick of claimed) expect(tick % EVERY_MS).toBe(0)
      expect(
        claimed.length,
        `no tick between the first and the last missing: ${claimed.join(', ')}`,
      ).toBe((claimed.at(-1)! - claimed[0]!) / EVERY_MS + 1)
      // Their runs end fulfilled (receipts deep enough) while a runner runs.
      await waitFor(
        'the runs of the claimed ticks fulfilled',
        async () =>
          (await Promise.all(claimed.map(runOf))).every((run) => run?.state === 'fulfilled'),
        120_000,
        500,
      )
      for (const tick of claimed)
        expect(await runOf(tick), `the run of tick ${tick}`).toMatchObject({
          trigger: 'tick',
          tickAt: tick,
          state: 'fulfilled',
        })
      const ticks = await ticksOnChain()
      expect(new Set(ticks).size, `ticks on chain: ${ticks.join(', ')}`).toBe(ticks.length)
      const onChain = new Set(ticks)
      expect(claimed.filter((tick) => !onChain.has(tick))).toEqual([])
      const known = new Set((await redis.zrange(claimsKey, 0, -1)).map(Number))
      expect(ticks.filter((tick) => !known.has(tick))).toEqual([])
      return claimed
    } finally {
      redis.disconnect()
    }
  }

  it(`two runners: ${TICKS} ticks on chain, once each, none missing`, async () => {
    await untilTicks(TICKS)
    await expectEveryTickOnce()
  }, 300_000)

  /** A runner whose wall clock is `offset` off (libfaketime: `+120s`, `-120s`). */
  function startSkewed(offset: string): Promise<PartProcess> {
    if (!existsSync(LIBFAKETIME))
      throw new Error(
        `${LIBFAKETIME} is missing: install it with \`sudo apt-get install -y faketime\``,
      )
    return startPart(
      'runner',
      {
        ...env,
        LD_PRELOAD: LIBFAKETIME,
        FAKETIME: offset,
        // Timers run on the monotonic clock: only the wall clock (Date.now()) is shifted.
        FAKETIME_DONT_FAKE_MONOTONIC: '1',
      },
      240_000,
    )
  }

  it('a runner SIGKILLed and one 120 s ahead (libfaketime): still every tick once, none missing', async () => {
    const before = (await ticksOnChain()).length
    runners.push(await startSkewed('+120s'))
    const victim = runners.shift()!
    victim.child.kill('SIGKILL')
    await victim.exited
    // About a minute of ticks with the runners left (one of them 120 s ahead).
    await untilTicks(before + 30)
    const ticks = await expectEveryTickOnce()
    expect(ticks.length).toBeGreaterThanOrEqual(before + 30)
    for (const runner of runners) await stopPart(runner)
    runners.length = 0
    // Nothing more was written twice while they stopped.
    const after = await ticksOnChain()
    expect(new Set(after).size).toBe(after.length)
  }, 600_000)

  it('the runner 45 s ahead SIGKILLed, one 120 s behind left: the ticks go on at their period', async () => {
    runners.push(...(await Promise.all(['+45s', '-120s'].map(startSkewed))))
    const before = (await ticksOnChain()).length
    await untilTicks(before + 5)
    const ahead = runners.shift()!
    ahead.child.kill('SIGKILL')
    await ahead.exited
    const left = (await ticksOnChain()).length
    // Twenty seconds of ticks, bounded at 90 s: a firing timed by a host's wall clock (BullMQ's job
    // schedulers dated the next one by the clock of the runner that took the last) left the runner
    // behind silent for two minutes and more.
    await untilTicks(left + 10, 90_000)
    const ticks = (await ticksOnChain()).slice(before).sort((a, b) => a - b)
    expect(new Set(ticks).size, `ticks on chain: ${ticks.join(', ')}`).toBe(ticks.length)
    expect(ticks.length, `none missing: ${ticks.join(', ')}`).toBe(
      (ticks.at(-1)! - ticks[0]!) / EVERY_MS + 1,
    )
  }, 600_000)
})
