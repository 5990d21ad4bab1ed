import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { freePort } from '../../src/dev/ports.ts'
import { startOwnedProcess, waitFor, type OwnedProcess } from '../../src/dev/process.ts'
import { sendConsumerRequests, waitForFulfilments } from '../../src/dev/requests.ts'
import { startDevStack, type DevStack } from '../../src/dev/stack.ts'
import { fairGameOddsRequest } from '../reliability/support.ts'
import { testRedisUrl, uniquePrefix } from '../support/redis.ts'

// One log format: a service process whose stdout is not a terminal (a file, a pipe, a container log,
// a shipper) writes one pino JSON object per stdout line and nothing else, whatever it does: start,
// serve a request, stop. Its lifecycle lines (listening, running, watching) are among them.

const bin = join(import.meta.dirname, '../../bin/feedrunner.js')

interface LogLine {
  level: number
  time: number
  msg: string
}

/** Every stdout line as a JSON log object; a line that is not one fails the test, quoted. */
function logLines(stdout: string): LogLine[] {
  return stdout
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => {
      let parsed: unknown
      try {
        parsed = JSON.parse(line)
      } catch {
        throw new Error(`a stdout line is not JSON: ${JSON.stringify(line)}`)
      }
      expect(parsed, line).toMatchObject({
        level: expect.any(Number),
        time: expect.any(Number),
        msg: expect.any(String),
      })
      // A key said twice (a child logger's binding over its parent's) parses to one: the line
      // written again from what it parsed to is then shorter than the line.
      expect(JSON.stringify(parsed), 'a key twice in this line').toBe(line)
      return parsed as LogLine
    })
}

/** Starts `feedrunner <args>` with its stdout kept apart from stderr. */
function serve(args: string[], env: Record<string, string>) {
  let stdout = ''
  const child = startOwnedProcess(
    `feedrunner ${args.join(' ')}`,
    process.execPath,
    [bin, ...args],
    {
      env: { ...process.env, LOG_FORMAT: '', ...env },
      keepOutputChars: Infinity,
      stopGraceMs: 15_000,
    },
  )
  child.child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString()))
  return { child, stdout: () => stdout }
}

describe('stdout of a service process off a terminal', () => {
  let stack: DevStack
  const started: OwnedProcess[] = []
  const stateDir = mkdtempSync(join(tmpdir(), 'feedrunner-stdout-json-'))

  beforeAll(async () => {
    stack = await startDevStack({
      env: { ...process.env, REDIS_URL: testRedisUrl(), LOG_LEVEL: 'warn', EA_PORT: '' },
      prefix: uniquePrefix('stdout-json'),
      runner: false,
    })
    // `start` below runs the adapter and the fetch workers of this stack.
    await stack.adapter.close()
    await stack.workers.close()
  }, 120_000)

  afterAll(async () => {
    for (const child of started) await child.stop()
    await stack?.stop()
    rmSync(stateDir, { recursive: true, force: true })
  })

  it('start: adapter, workers and runner, a request served, then stopped: JSON lines only', async () => {
    const start = serve(['start'], {
      ...stack.env,
      LOG_LEVEL: 'info',
      METRICS_PORT: String(await freePort()),
      OPERATIONS_PORT: '0',
    })
    started.push(start.child)
    await waitFor(
      `start to watch; its output so far:\n${start.child.output()}`,
      async () => start.stdout().includes('feedrunner runner watching'),
      90_000,
      100,
    )
    const { consumer, provider, deployer } = stack.contracts
    const fromBlock = (await provider.getBlockNumber()) + 1
    const [sent] = await sendConsumerRequests(consumer, deployer, [fairGameOddsRequest()])
    const fulfilled = await waitForFulfilments(consumer, provider, [sent!.requestId], {
      fromBlock,
      timeoutMs: 60_000,
    })
    expect(fulfilled.size).toBe(1)
    await start.child.stop('SIGTERM')
    const lines = logLines(start.stdout())
    const messages = lines.map((line) => line.msg)
    for (const said of [
      /^feedrunner adapter listening on http:\/\/127\.0\.0\.1:\d+ \(metrics /,
      /^feedrunner fetch workers running for /,
      /^feedrunner runner watching and working on RPC_URL /,
      /^stopping$/,
    ])
      expect(
        messages.some((message) => said.test(message)),
        String(said),
      ).toBe(true)
  }, 200_000)

  it('feeds serve and dev: JSON lines only, their ready lines among them', async () => {
    const feeds = serve(['feeds', 'serve', '--port', '0', '--keys', 'stdout-json-key'], {
      LOG_LEVEL: 'warn',
    })
    started.push(feeds.child)
    await waitFor('feeds serve to listen', async () => feeds.stdout().includes('listening'), 60_000)
    await feeds.child.stop('SIGTERM')
    expect(logLines(feeds.stdout()).map((line) => line.msg)).toEqual([
      expect.stringMatching(/^feed service listening on http:\/\/127\.0\.0\.1:\d+ \(1 key/),
    ])

    const dev = serve(['dev'], {
      REDIS_URL: testRedisUrl(),
      QUEUE_PREFIX: uniquePrefix('stdout-json-dev'),
      DEV_STATE_FILE: join(stateDir, 'dev.json'),
      // Info: the lines of every part as it starts, the runner's flux monitor among them.
      LOG_LEVEL: 'info',
    })
    started.push(dev.child)
    await waitFor(
      `dev to be ready; its output so far:\n${dev.child.output()}`,
      async () => dev.stdout().includes('feedrunner dev ready'),
      180_000,
      200,
    )
    await dev.child.stop('SIGTERM')
    const messages = logLines(dev.stdout()).map((line) => line.msg)
    expect(messages.some((message) => /^part\s+where\n/.test(message))).toBe(true)
    expect(messages.some((message) => message.startsWith('feedrunner dev ready in'))).toBe(true)
    expect(messages).toContain('flux monitor started')
    expect(messages).toContain('stopping...')
  }, 300_000)
})
