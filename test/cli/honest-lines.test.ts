import { spawn } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { createServer, type AddressInfo, type Server } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { freePort } from '../../src/dev/ports.ts'
import { waitFor } from '../../src/dev/process.ts'
import { writeDevState, type DevState } from '../../src/dev/state.ts'
import { runFeedrunner } from '../e2e/support/cli.ts'
import { testRedisUrl, uniquePrefix } from '../support/redis.ts'

// Lines that said the wrong thing: `status` named the dev stack while it read the Redis and prefix
// the environment gave; a start refused for a busy port, and a Ctrl-C of the dev stack, ended with
// "Redis is not answering" while Redis was up (the process's own close, or the Ctrl-C reaching
// redis-server before feedrunner had stopped what uses it).

const bin = join(import.meta.dirname, '../../bin/feedrunner.js')
const REDIS_BLAME =
  /not answering|Stream isn't writeable|ECONNRESET|ECONNREFUSED|Connection is closed/
const dir = mkdtempSync(join(tmpdir(), 'feedrunner-honest-lines-'))

afterAll(() => rmSync(dir, { recursive: true, force: true }))

describe('status says whose runs it shows', () => {
  const stateFile = join(dir, 'dev.json')
  // A dev stack "running" from this checkout: this test process stands in for it.
  const devStack: DevState = {
    pid: process.pid,
    startedAt: new Date().toISOString(),
    redisUrl: testRedisUrl(),
    queuePrefix: uniquePrefix('honest-dev'),
    rpcUrl: 'http://127.0.0.1:9',
    chainId: 31337,
    jobsDir: join(import.meta.dirname, '../../jobs'),
    adapterUrl: 'http://127.0.0.1:9',
    feedServiceUrl: 'http://127.0.0.1:9',
    metricsUrl: 'http://127.0.0.1:9/metrics',
    healthUrl: 'http://127.0.0.1:9/ready',
    contracts: { linkToken: '0x0', operator: '0x0', consumer: '0x0' },
  }
  writeDevState(stateFile, devStack)
  const redis = new URL(testRedisUrl()).host

  it("with nothing set, the dev stack's", async () => {
    const status = await runFeedrunner(['status'], {
      DEV_STATE_FILE: stateFile,
      REDIS_URL: '',
      QUEUE_PREFIX: '',
    })
    expect(status.code, status.stderr).toBe(0)
    expect(status.stdout.split('\n')[0]).toBe(
      `dev stack of this checkout (pid ${process.pid}): Redis ${redis}, queue prefix ${devStack.queuePrefix}`,
    )
  })

  it('with REDIS_URL and QUEUE_PREFIX set, the installation they name, not the dev stack', async () => {
    const prefix = uniquePrefix('honest-own')
    for (const env of [
      { REDIS_URL: testRedisUrl(), QUEUE_PREFIX: prefix },
      { REDIS_URL: '', QUEUE_PREFIX: prefix },
    ]) {
      const status = await runFeedrunner(['status'], { DEV_STATE_FILE: stateFile, ...env })
      expect(status.code, status.stderr).toBe(0)
      expect(status.stdout.split('\n')[0]).toBe(`Redis ${redis}, queue prefix ${prefix}`)
    }
  })
})

describe('no Redis outage said when Redis was up', () => {
  let taken: Server | undefined
  afterAll(() => taken?.close())

  it('a start refused for a busy EA_PORT: the one line that says so', async () => {
    taken = createServer()
    await new Promise<void>((listening) => taken!.listen(0, '127.0.0.1', listening))
    const port = (taken.address() as AddressInfo).port
    // The close that follows the refusal raced the connections' ready checks: tried three times.
    for (let attempt = 0; attempt < 3; attempt++) {
      const started = await runFeedrunner(['start'], {
        REDIS_URL: testRedisUrl(),
        QUEUE_PREFIX: uniquePrefix('honest-busy'),
        EA_PORT: String(port),
        METRICS_PORT: String(await freePort()),
        SPORTS_URL: 'http://127.0.0.1:9',
        LOG_LEVEL: 'warn',
      })
      expect(started.code).toBe(1)
      expect(started.stderr.trim()).toBe(
        `feedrunner start could not start: EA_PORT ${port} is in use (another process listens there): give EA_PORT a free port`,
      )
      expect(started.stdout + started.stderr).not.toMatch(REDIS_BLAME)
    }
  }, 180_000)

  it("Ctrl-C of the dev stack (SIGINT to its terminal's process group): stopped in order, nothing about Redis", async () => {
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      DEV_STATE_FILE: join(dir, 'ctrl-c.json'),
      LOG_FORMAT: 'json',
      LOG_LEVEL: 'warn',
    }
    // No REDIS_URL: the stack starts its own redis-server, as on a fresh machine.
    delete env.REDIS_URL
    delete env.QUEUE_PREFIX
    const dev = spawn(process.execPath, [bin, 'dev'], {
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    })
    let output = ''
    dev.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()))
    dev.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()))
    const exited = new Promise<number | null>((resolveExit) => dev.once('exit', resolveExit))
    try {
      await waitFor(
        `dev to be ready; its output so far:\n${output}`,
        async () => output.includes('feedrunner dev ready'),
        180_000,
        200,
      )
      // What a terminal does on Ctrl-C: SIGINT to every process of the foreground group.
      process.kill(-dev.pid!, 'SIGINT')
      expect(await exited).toBe(0)
    } finally {
      if (dev.exitCode === null) process.kill(-dev.pid!, 'SIGKILL')
    }
    expect(output).toContain('stopping...')
    expect(output).not.toMatch(REDIS_BLAME)
  }, 240_000)
})
