import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { waitFor } from '../../src/dev/process.ts'
import { startDevStack, type DevStack } from '../../src/dev/stack.ts'
import { firingJobId, tickRunId } from '../../src/runner/ticks.ts'
import { testRedisUrl, uniquePrefix } from '../support/redis.ts'
import { startPart, stopPart, tickWriterJob, ticksWritten, type PartProcess } from './support.ts'

const EVERY_MS = 2_000
const CHAIN_ID = 31337
const EXTERNAL_JOB_ID = '6c1f0e2a-9b7d-4c3e-8a51-2f4d6e8b0c13'

/**
 * Redis loses the last few ticks' claims, run records and sender records while an older claim stays
 * (what a SIGKILL restart or a failover to a replica that lagged leaves): the next firing finds those
 * ticks unclaimed within its catch-up window. Their writes are on chain, so none is written again.
 */
describe('cron ticks whose claims Redis lost while their writes are on chain', () => {
  const prefix = uniquePrefix('rel-cron-claims')
  let stack: DevStack
  let pushed: string
  let runner: PartProcess | undefined
  let jobsDir: string

  beforeAll(async () => {
    jobsDir = mkdtempSync(join(tmpdir(), 'feedrunner-cron-claims-'))
    stack = await startDevStack({
      env: { ...process.env, REDIS_URL: testRedisUrl(), LOG_LEVEL: 'warn', EA_PORT: '' },
      prefix,
      runner: false,
    })
    pushed = await tickWriterJob(stack, jobsDir, EXTERNAL_JOB_ID)
    runner = await startPart(
      'runner',
      { ...stack.env, JOBS_DIR: jobsDir, RUNNER_LOCK_MS: '3000', LOG_LEVEL: 'info' },
      240_000,
    )
  }, 600_000)

  afterAll(async () => {
    await stopPart(runner)
    await stack?.stop()
    rmSync(jobsDir, { recursive: true, force: true })
  })

  const ticksOnChain = () => ticksWritten(stack.contracts.provider, pushed)

  const untilTicks = (what: string, done: (ticks: number[]) => boolean) =>
    waitFor(what, async () => done(await ticksOnChain()), 180_000, 500).catch(
      async (error: unknown) => {
        throw new Error(
          `${(error as Error).message}: on chain ${(await ticksOnChain()).join(', ')}; the runner said:\n${runner?.output().slice(-4_000)}`,
        )
      },
    )

  /** Forgets every tick after `kept` as a lagging replica would: its claim, firing, run, transaction. */
  async function loseClaimsAfter(redis: Redis, kept: number): Promise<void> {
    const base = `${prefix}:cron:${CHAIN_ID}:${EXTERNAL_JOB_ID}`
    const lost = [...Array(30).keys()].map((step) => kept + (step + 1) * EVERY_MS)
    await redis
      .multi()
      .zremrangebyscore(`${base}:ticks`, `(${kept}`, '+inf')
      .del(
        ...lost.flatMap((tick) => {
          const runId = tickRunId(EXTERNAL_JOB_ID, tick)
          return [
            `${base}:job:${firingJobId(EXTERNAL_JOB_ID, tick)}`,
            `${prefix}:runner:run:${CHAIN_ID}:${runId}`,
            `${prefix}:txstate:${CHAIN_ID}:job:${runId}_submit`,
          ]
        }),
      )
      .exec()
  }

  it('writes each tick once, the ones it finds unclaimed again too', async () => {
    await untilTicks('4 ticks on chain', (ticks) => ticks.length >= 4)
    const redis = new Redis(testRedisUrl())
    try {
      const written = await ticksOnChain()
      // Two ticks written after the one kept, and the kept one inside the 30 s catch-up window.
      const kept = written.at(-3)!
      const claims = await redis.zrange(
        `${prefix}:cron:${CHAIN_ID}:${EXTERNAL_JOB_ID}:ticks`,
        0,
        -1,
      )
      expect(claims.map(Number), 'the kept tick is claimed').toContain(kept)
      const redisNow = Number((await redis.time())[0]) * 1_000
      expect(redisNow - kept, 'the kept tick is within the catch-up window').toBeLessThan(20_000)
      await loseClaimsAfter(redis, kept)
      await untilTicks('3 ticks after the loss', (ticks) =>
        ticks.some((tick) => tick >= redisNow + 3 * EVERY_MS),
      )
    } finally {
      redis.disconnect()
    }
    const ticks = await ticksOnChain()
    const twice = ticks.filter((tick, index) => ticks.indexOf(tick) !== index)
    expect(twice, `ticks written twice (on chain: ${ticks.join(', ')})`).toEqual([])
    // Not one skipped either: a tick found on chain is the only one left out.
    const every = ticks.slice(1).map((tick, index) => tick - ticks[index]!)
    expect(new Set(every), `ticks on chain: ${ticks.join(', ')}`).toEqual(new Set([EVERY_MS]))
  }, 600_000)
})
