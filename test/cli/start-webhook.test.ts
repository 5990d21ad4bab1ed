import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createLogger } from '../../src/config/logger.ts'
import { parseSettings } from '../../src/config/settings.ts'
import { freePort } from '../../src/dev/ports.ts'
import { startDevStack, type DevStack } from '../../src/dev/stack.ts'
import { RunStore } from '../../src/runner/run-record.ts'
import { startPart, stopPart, type PartProcess } from '../reliability/support.ts'
import { testRedisUrl, uniquePrefix } from '../support/redis.ts'
import { callWebhookRun, webhookSpecWithoutBridge } from '../support/webhook-spec.ts'

const JOB_ID = '5d1e7c2a-0b3f-4e6d-9a21-7c8b9d0e1f33'
const TOKEN = 'start-runs-token-'.padEnd(40, 'x')

const SPEC = webhookSpecWithoutBridge(JOB_ID)

/**
 * `feedrunner start` (the adapter, fetch workers and the runner in one process) serves a webhook job's
 * runs endpoint on the adapter's port, as `feedrunner runner` serves it on its operations port: an
 * operator who runs the one process can start webhook runs.
 */
describe('feedrunner start: the runs endpoint of webhook jobs on the adapter port', () => {
  let stack: DevStack
  let start: PartProcess | undefined
  let jobsDir: string
  let port: number
  const redis = new Redis(testRedisUrl())

  beforeAll(async () => {
    jobsDir = mkdtempSync(join(tmpdir(), 'feedrunner-start-webhook-'))
    writeFileSync(join(jobsDir, 'webhook.toml'), SPEC)
    const env = { ...process.env, REDIS_URL: testRedisUrl(), LOG_LEVEL: 'warn', EA_PORT: '' }
    const logger = createLogger(parseSettings({ LOG_LEVEL: 'fatal' }), 'start-webhook')
    stack = await startDevStack({
      env,
      prefix: uniquePrefix('start-webhook'),
      runner: false,
      logger,
    })
    port = await freePort()
    start = await startPart(
      'start',
      {
        ...stack.env,
        JOBS_DIR: jobsDir,
        EA_PORT: String(port),
        RUNS_API_TOKEN: TOKEN,
      },
      120_000,
    )
  }, 240_000)

  afterAll(async () => {
    await stopPart(start)
    await stack?.stop()
    redis.disconnect()
    rmSync(jobsDir, { recursive: true, force: true })
  })

  it('takes a call with the operator token, answers the run id, and runs it', async () => {
    const runs = new RunStore(redis, `${stack.env.QUEUE_PREFIX}:runner`, 31337)
    const { status, run } = await callWebhookRun(
      `http://127.0.0.1:${port}`,
      JOB_ID,
      TOKEN,
      2.5,
      runs,
    )
    expect(status).toBe(200)
    expect(run).toMatchObject({ trigger: 'call', caller: 'operator' })
    expect(run!.tasks!.find((task) => task.id === 'multiply')!.output).toBe('250')
  })

  it('refuses a call without credentials before it costs a run', async () => {
    const answer = await fetch(`http://127.0.0.1:${port}/v2/jobs/${JOB_ID}/runs`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ data: { result: 1 } }),
    })
    expect(answer.status).toBe(401)
  })
})
