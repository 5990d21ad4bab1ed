import { spawn, spawnSync } from 'node:child_process'
import { copyFileSync, mkdtempSync, rmSync } from 'node:fs'
import { createServer, type AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { freePort } from '../../src/dev/ports.ts'
import { startPrivateRedis } from '../../src/dev/redis.ts'
import { testRedisUrl } from '../support/redis.ts'

const projectRoot = join(import.meta.dirname, '../..')

const bin = new URL('../../bin/feedrunner.js', import.meta.url).pathname
const NODE_KEY = '0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d'

function runner(env: Record<string, string>) {
  return spawnSync(process.execPath, [bin, 'runner'], {
    env: { ...process.env, OPERATIONS_PORT: '0', NODE_PRIVATE_KEYS: '', ...env },
    encoding: 'utf8',
    timeout: 60_000,
  })
}

/** Settings are checked before anything connects, and a message never carries a secret. */
describe('feedrunner runner refuses to start, saying why', () => {
  it('on a zero node key: names the setting and what is wrong, not the value', () => {
    const zero = `0x${'0'.repeat(64)}`
    const child = runner({ NODE_PRIVATE_KEY: zero, RPC_URL: 'http://127.0.0.1:8545' })
    expect(child.status).toBe(1)
    expect(child.stderr).toContain(
      'NODE_PRIVATE_KEY is not a valid secp256k1 private key (it is zero)',
    )
    expect(child.stderr + child.stdout).not.toContain(zero.slice(2, 30))
  })

  it('on an RPC_URL nothing answers at: names the setting, host and port, never the path', async () => {
    const port = await freePort()
    const child = runner({
      NODE_PRIVATE_KEY: NODE_KEY,
      RPC_URL: `http://127.0.0.1:${port}/v2/secret-api-key-123`,
    })
    expect(child.status).toBe(1)
    expect(child.stderr).toContain(`nothing answers at RPC_URL 127.0.0.1:${port} (ECONNREFUSED)`)
    // A raw key in the environment still signs, with one warning.
    expect(
      child.stdout.split('\n').filter((line) => line.includes('the runner signs with raw keys')),
    ).toHaveLength(1)
    expect(child.stdout).toContain('from the environment (NODE_PRIVATE_KEY)')
    expect(child.stderr + child.stdout).not.toContain('secret-api-key-123')
    expect(child.stderr).not.toMatch(/\n\s+at .+:\d+:\d+/)
  })
})

/** Runs `feedrunner <args>` until it prints `until` (then SIGTERM) or ends by itself. */
function runUntil(
  args: readonly string[],
  env: Record<string, string>,
  until: RegExp,
  options: { cwd?: string; boundMs?: number } = {},
): Promise<{ code: number | null; stdout: string; stderr: string; matched: boolean }> {
  return new Promise((resolveRun, reject) => {
    const child = spawn(process.execPath, [bin, ...args], {
      cwd: options.cwd,
      env: { ...process.env, OPERATIONS_PORT: '0', LOG_LEVEL: 'warn', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let stdout = ''
    let stderr = ''
    let matched = false
    const look = () => {
      if (!matched && until.test(stdout + stderr)) {
        matched = true
        child.kill('SIGTERM')
      }
    }
    child.stdout.on('data', (chunk: Buffer) => ((stdout += chunk.toString()), look()))
    child.stderr.on('data', (chunk: Buffer) => ((stderr += chunk.toString()), look()))
    const timer = setTimeout(() => {
      child.kill('SIGKILL')
      reject(new Error(`feedrunner ${args.join(' ')} hung:\n${stdout}\n${stderr}`))
    }, options.boundMs ?? 90_000)
    child.once('exit', (code) => {
      clearTimeout(timer)
      resolveRun({ code, stdout, stderr, matched })
    })
  })
}

/** Issue 39, point 6: every setting checked before anything starts. */
describe('feedrunner start checks everything before a port opens or a connection is tried', () => {
  it('a misspelt setting is named with the setting it meant', async () => {
    const child = runner({ NODE_PRIVATEKEY: NODE_KEY, RPC_URL: 'http://127.0.0.1:8545' })
    expect(child.status).toBe(1)
    expect(child.stderr).toContain('NODE_PRIVATEKEY: did you mean NODE_PRIVATE_KEY?')
    expect(child.stderr + child.stdout).not.toContain(NODE_KEY.slice(2, 30))
  })

  it("a runner setting's problem stops start before the adapter listens", async () => {
    const started = await runUntil(
      ['start'],
      {
        RPC_URL: 'http://127.0.0.1:8545',
        CHAINS_FILE: 'chains.toml',
        EA_PORT: String(await freePort()),
        METRICS_PORT: String(await freePort()),
      },
      /listening/,
    )
    expect(started.code).toBe(1)
    expect(started.stderr).toContain('RPC_URL and CHAINS_FILE are both set')
    expect(started.stdout + started.stderr).not.toMatch(/listening|fetch workers running/)
  })

  it('an unreachable Redis is one line and a bounded wait, never a dump', async () => {
    const port = await freePort()
    const started = await runUntil(
      ['start'],
      {
        REDIS_URL: `redis://127.0.0.1:${port}`,
        REDIS_START_WAIT_MS: '1500',
        SPORTS_URL: 'http://127.0.0.1:8090',
        EA_PORT: String(await freePort()),
        METRICS_PORT: String(await freePort()),
      },
      /listening/,
    )
    expect(started.code).toBe(1)
    expect(started.stderr.trim().split('\n')).toEqual([
      `waiting up to 2 s for Redis at REDIS_URL 127.0.0.1:${port} (ECONNREFUSED)`,
      `feedrunner start could not start: Redis does not answer at REDIS_URL 127.0.0.1:${port} (ECONNREFUSED; waited 2 s): start it, or set REDIS_URL to one that runs`,
    ])
    expect(started.stdout).not.toMatch(/listening|Error:|\n\s+at /)
  })

  it('a port setting that is taken is named', async () => {
    const taken = createServer()
    await new Promise<void>((listening) => taken.listen(0, '0.0.0.0', listening))
    const port = (taken.address() as AddressInfo).port
    try {
      for (const setting of ['EA_PORT', 'METRICS_PORT']) {
        const started = await runUntil(
          ['adapter'],
          {
            REDIS_URL: testRedisUrl(),
            EA_PORT: String(await freePort()),
            METRICS_PORT: String(await freePort()),
            [setting]: String(port),
          },
          /adapter listening on/,
        )
        expect(started.code, started.stdout).toBe(1)
        expect(started.stderr).toContain(
          `feedrunner adapter could not start: ${setting} ${port} is in use (another process listens there): give ${setting} a free port`,
        )
      }
    } finally {
      taken.close()
    }
  })

  it('.env.example copied as .env: start runs with it as it is', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'feedrunner-env-copy-'))
    try {
      copyFileSync(join(projectRoot, '.env.example'), join(dir, '.env'))
      const env: Record<string, string> = {
        REDIS_URL: testRedisUrl(),
        EA_PORT: String(await freePort()),
        METRICS_PORT: String(await freePort()),
      }
      const started = await runUntil(['start'], env, /feedrunner adapter listening on/, {
        cwd: dir,
      })
      expect(started.matched, started.stdout + started.stderr).toBe(true)
      expect(started.stderr).not.toMatch(/Invalid settings|could not start/)
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})

/**
 * BullMQ prints "IMPORTANT! Eviction policy is ..." raw on stderr for every connection it opens; a
 * process says it once in its log, with the limit, what is at stake and the remedy.
 */
describe('a process on a Redis that may evict keys', () => {
  it('says so once in its log, and nothing raw on stderr', async () => {
    const redis = await startPrivateRedis({
      extraArgs: ['--maxmemory', '64mb', '--maxmemory-policy', 'allkeys-lru'],
    })
    try {
      const started = await runUntil(
        ['adapter'],
        {
          REDIS_URL: redis.url,
          LOG_FORMAT: 'json',
          EA_PORT: String(await freePort()),
          METRICS_PORT: String(await freePort()),
        },
        /evicts keys when its memory is full/,
      )
      expect(started.matched, started.stdout + started.stderr).toBe(true)
      const lines = started.stdout.split('\n')
      const ours = lines.filter((line) => line.includes('evicts keys when its memory is full'))
      expect(ours).toHaveLength(1)
      expect(JSON.parse(ours[0]!)).toMatchObject({
        level: 40,
        redisMaxmemoryPolicy: 'allkeys-lru',
        msg: expect.stringContaining(
          `Redis at REDIS_URL 127.0.0.1:${redis.port} evicts keys when its memory is full (maxmemory 64.00M, maxmemory-policy allkeys-lru)`,
        ),
      })
      // BullMQ's own line, if it came before the process stopped, is one log line at most.
      expect(lines.filter((line) => line.includes('Eviction policy is')).length).toBeLessThan(2)
      expect(started.stderr).not.toContain('IMPORTANT!')
    } finally {
      await redis.stop()
    }
  })
})
