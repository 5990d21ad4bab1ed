import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { waitFor } from '../../src/dev/process.ts'
import { startPrivateRedis, type PrivateRedis } from '../../src/dev/redis.ts'
import { startDevStack, type DevStack } from '../../src/dev/stack.ts'
import { uniquePrefix } from '../support/redis.ts'
import { startPart, stopPart, tickWriterJob, ticksWritten, type PartProcess } from './support.ts'

const EVERY_MS = 2_000
const EXTERNAL_JOB_ID = '6c1f0e2a-9b7d-4c3e-8a51-2f4d6e8b0c12'

/**
 * Redis is a cache: when it loses what it held (a FLUSHALL here; an empty instance or a failover to a
 * replica that never had it), a cron job goes on ticking without a restart or a reload, each tick
 * once. (Under BullMQ's job schedulers the schedule itself lived in Redis and had to be written again
 * as the runner rebuilt from the chain; the cron ticker keeps it in each runner and adds each firing
 * as it falls due.)
 */
describe('cron ticks after Redis lost its state', () => {
  let redis: PrivateRedis
  let stack: DevStack
  let pushed: string
  let runner: PartProcess | undefined
  let jobsDir: string

  beforeAll(async () => {
    redis = await startPrivateRedis()
    jobsDir = mkdtempSync(join(tmpdir(), 'feedrunner-cron-loss-'))
    stack = await startDevStack({
      env: { ...process.env, REDIS_URL: redis.url, LOG_LEVEL: 'warn', EA_PORT: '' },
      prefix: uniquePrefix('rel-cron-loss'),
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
    await redis?.stop()
    rmSync(jobsDir, { recursive: true, force: true })
  })

  const ticksOnChain = () => ticksWritten(stack.contracts.provider, pushed)

  const untilTick = (what: string, done: (ticks: number[]) => boolean) =>
    waitFor(what, async () => done(await ticksOnChain()), 180_000, 500).catch(
      async (error: unknown) => {
        throw new Error(
          `${(error as Error).message}: on chain ${(await ticksOnChain()).join(', ')}; the runner said:\n${runner?.output().slice(-4_000)}`,
        )
      },
    )

  it('goes on ticking once, each tick once, after a FLUSHALL', async () => {
    await untilTick('3 ticks on chain', (ticks) => ticks.length >= 3)
    const admin = new Redis(redis.url)
    const flushedAt = Number((await admin.time())[0]) * 1_000
    await admin.flushall()
    admin.disconnect()
    await untilTick('3 ticks after the flush', (ticks) =>
      ticks.some((tick) => tick >= flushedAt + 3 * EVERY_MS),
    )
    const ticks = await ticksOnChain()
    expect(new Set(ticks).size, `ticks on chain: ${ticks.join(', ')}`).toBe(ticks.length)
  }, 600_000)
})
