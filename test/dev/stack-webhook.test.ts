import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createLogger } from '../../src/config/logger.ts'
import { parseSettings } from '../../src/config/settings.ts'
import { startDevStack, type DevStack } from '../../src/dev/stack.ts'
import { RunStore } from '../../src/runner/run-record.ts'
import { testRedisUrl, uniquePrefix } from '../support/redis.ts'
import { callWebhookRun, webhookSpecWithoutBridge } from '../support/webhook-spec.ts'

const JOB_ID = '5d1e7c2a-0b3f-4e6d-9a21-7c8b9d0e1f44'
const TOKEN = 'dev-stack-runs-token-'.padEnd(40, 'x')

const SPEC = webhookSpecWithoutBridge(JOB_ID)

/** The dev stack (`npm start`) serves webhook jobs' runs endpoint on its adapter's port, as `start` does. */
describe('the dev stack: webhook runs on the adapter port', () => {
  let stack: DevStack
  let jobsDir: string
  const redis = new Redis(testRedisUrl())

  beforeAll(async () => {
    jobsDir = mkdtempSync(join(tmpdir(), 'feedrunner-stack-webhook-'))
    writeFileSync(join(jobsDir, 'webhook.toml'), SPEC)
    stack = await startDevStack({
      env: {
        ...process.env,
        REDIS_URL: testRedisUrl(),
        LOG_LEVEL: 'warn',
        EA_PORT: '',
        JOBS_DIR: jobsDir,
        RUNS_API_TOKEN: TOKEN,
      },
      prefix: uniquePrefix('stack-webhook'),
      logger: createLogger(parseSettings({ LOG_LEVEL: 'fatal' }), 'stack-webhook'),
    })
  }, 240_000)

  afterAll(async () => {
    await stack?.stop()
    redis.disconnect()
    rmSync(jobsDir, { recursive: true, force: true })
  })

  it('takes a call with the operator token and runs it', async () => {
    const runs = new RunStore(redis, `${stack.env.QUEUE_PREFIX}:runner`, 31337)
    const { status, run } = await callWebhookRun(stack.adapter.url, JOB_ID, TOKEN, 1.5, runs)
    expect(status).toBe(200)
    expect(run!.tasks!.find((task) => task.id === 'multiply')!.output).toBe('150')
  })
})
