import { spawn } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { decryptKeystoreJsonSync } from 'ethers'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ANVIL_PRIVATE_KEYS } from '../../src/dev/anvil.ts'
import { connectClient } from '../../src/queue/connection.ts'
import { loadJobRegistry } from '../../src/runner/job-registry.ts'
import { publishLoadedJobs } from '../../src/runner/loaded-jobs.ts'
import { RunStore, type RunRecord } from '../../src/runner/run-record.ts'
import { runFeedrunner } from '../e2e/support/cli.ts'
import { testRedisUrl, uniquePrefix } from '../support/redis.ts'

// The commands an operator reaches for in the first week: keys export and delete, runs list with
// its filters, and the jobs a running node serves. Each against real files, a real Redis and the
// stores the runner itself writes with.

const bin = join(import.meta.dirname, '../../bin/feedrunner.js')
const projectRoot = join(import.meta.dirname, '../..')
const dir = mkdtempSync(join(tmpdir(), 'feedrunner-operator-commands-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

/** `feedrunner <args>` with `input` on its stdin (closed after it), as a person typing an answer. */
function answered(
  args: readonly string[],
  input: string | undefined,
  env: Record<string, string> = {},
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolveRun) => {
    const child = spawn(process.execPath, [bin, ...args], {
      cwd: dir,
      env: { ...process.env, LOG_LEVEL: 'warn', ...env },
      stdio: ['pipe', 'pipe', 'pipe'],
    })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()))
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()))
    child.stdin.end(input)
    child.once('exit', (code) => resolveRun({ code, stdout, stderr }))
  })
}

describe('keys export and keys delete', () => {
  const keys = join(dir, 'keys')
  const passwordFile = join(dir, 'keys.password')
  let address = ''

  beforeAll(async () => {
    const created = await answered(
      ['keys', 'create', '--dir', keys, '--password-file', passwordFile, '--json'],
      undefined,
    )
    expect(created.code, created.stderr).toBe(0)
    address = (JSON.parse(created.stdout) as { address: string }).address
  }, 60_000)

  it('export: the keystore alone on stdout, or a 0600 file, each opening with the password', async () => {
    const password = readFileSync(passwordFile, 'utf8').trim()
    const shown = await answered(
      ['keys', 'export', address, '--dir', keys, '--password-file', passwordFile],
      undefined,
    )
    expect(shown.code, shown.stderr).toBe(0)
    expect(decryptKeystoreJsonSync(shown.stdout, password).address).toBe(address)

    const out = join(dir, 'backup.json')
    const written = await answered(
      ['keys', 'export', address.toLowerCase(), '--dir', keys, '--out', out, '--json'],
      undefined,
      { KEYSTORE_PASSWORD_FILE: passwordFile },
    )
    expect(written.code, written.stderr).toBe(0)
    expect(JSON.parse(written.stdout)).toEqual({ address, file: out })
    expect(statSync(out).mode & 0o777).toBe(0o600)
    expect(decryptKeystoreJsonSync(readFileSync(out, 'utf8'), password).address).toBe(address)

    // Never over a file that exists, and never a backup that does not open.
    const again = await answered(
      ['keys', 'export', address, '--dir', keys, '--password-file', passwordFile, '--out', out],
      undefined,
    )
    expect(again.code).toBe(1)
    const wrong = await answered(
      ['keys', 'export', address, '--dir', keys, '--password-env', 'WRONG'],
      undefined,
      { WRONG: 'not-the-password' },
    )
    expect(wrong.code).toBe(1)
    expect(wrong.stdout).toBe('')
    expect(wrong.stderr).toContain('does not open with the password from the variable WRONG')
  }, 120_000)

  it('delete: asks, and deletes only on yes; --yes deletes without asking', async () => {
    const listed = await answered(['keys', 'list', '--dir', keys, '--json'], undefined)
    const [only] = (JSON.parse(listed.stdout) as { keys: { file: string }[] }).keys
    const file = join(keys, only!.file)
    for (const input of [undefined, 'no\n']) {
      const kept = await answered(['keys', 'delete', address, '--dir', keys], input)
      expect(kept.code, kept.stderr).toBe(1)
      expect(kept.stderr).toContain(`delete ${file}, the keystore of ${address}?`)
      expect(kept.stderr).toContain("First remove it from the Operator's authorised senders")
      expect(kept.stderr).toContain('not deleted')
      expect(existsSync(file)).toBe(true)
    }
    const deleted = await answered(['keys', 'delete', address, '--dir', keys], 'yes\n')
    expect(deleted.code, deleted.stderr).toBe(0)
    expect(deleted.stdout).toContain(`deleted ${file}`)
    expect(existsSync(file)).toBe(false)

    const imported = await answered(
      ['keys', 'import', '--private-key-env', 'RAW_KEY', '--dir', keys, '--json'],
      undefined,
      { RAW_KEY: ANVIL_PRIVATE_KEYS[5], KEYSTORE_PASSWORD_FILE: passwordFile },
    )
    const second = JSON.parse(imported.stdout) as { address: string; file: string }
    const quiet = await answered(
      ['keys', 'delete', second.address, '--dir', keys, '--yes', '--json'],
      undefined,
    )
    expect(quiet.code, quiet.stderr).toBe(0)
    expect(JSON.parse(quiet.stdout)).toEqual({
      address: second.address,
      file: second.file,
      deleted: true,
    })
    expect(existsSync(second.file)).toBe(false)
  }, 120_000)
})

describe('runs list', () => {
  const prefix = uniquePrefix('runs-list')
  const requester = (n: number) => `0x${String(n).repeat(40)}`
  const run = (n: number, job: string, state: RunRecord['state']) => ({
    state,
    chainId: 31337,
    operator: '0xe7f1725E7734CE288F8367e1Bb143E90bb3F0512',
    job,
    externalJobId: `3f1c7d2a-6b1e-4f0a-9c55-0a1b2c3d4e0${n}`,
    requester: requester(n),
    payment: '0',
    blockNumber: n,
    requestTxHash: `0x${'ab'.repeat(32)}`,
  })
  let between = ''

  beforeAll(async () => {
    const redis = await connectClient(testRedisUrl())
    try {
      const store = new RunStore(redis, `${prefix}:runner`, 31337)
      await store.create(`0x${'01'.repeat(32)}`, run(1, 'datafeed game-odds (uint256)', 'errored'))
      await store.create(`0x${'02'.repeat(32)}`, run(2, 'datafeed weather-current', 'fulfilled'))
      // Redis's clock, which stamps the runs, between the second and the third.
      const redisNowMs = async () => {
        const [seconds, micros] = await redis.time()
        return Number(seconds) * 1000 + Math.floor(Number(micros) / 1000)
      }
      const at = (await redisNowMs()) + 1
      between = new Date(at).toISOString()
      while ((await redisNowMs()) <= at)
        await new Promise((resolveWait) => setTimeout(resolveWait, 5))
      await store.create(
        `0x${'03'.repeat(32)}`,
        run(3, 'datafeed game-odds (uint256)', 'fulfilled'),
      )
      await store.create(`0x${'04'.repeat(32)}`, {
        ...run(4, 'pushed game-odds', 'fulfilled'),
        trigger: 'tick',
        tickAt: await redisNowMs(),
      })
    } finally {
      redis.disconnect()
    }
  })

  async function listed(...filters: string[]): Promise<string[]> {
    const ran = await runFeedrunner(['runs', 'list', ...filters, '--json'], {
      REDIS_URL: testRedisUrl(),
      QUEUE_PREFIX: prefix,
      DEV_STATE_FILE: join(dir, 'no-dev.json'),
    })
    expect(ran.code, ran.stderr).toBe(0)
    return (JSON.parse(ran.stdout) as RunRecord[]).map((record) => record.requestId.slice(0, 4))
  }

  it('newest first, and each filter alone and together', async () => {
    expect(await listed()).toEqual(['0x04', '0x03', '0x02', '0x01'])
    expect(await listed('--state', 'fulfilled')).toEqual(['0x04', '0x03', '0x02'])
    expect(await listed('--trigger', 'tick')).toEqual(['0x04'])
    expect(await listed('--trigger', 'request', '--job', 'game-odds')).toEqual(['0x03', '0x01'])
    expect(await listed('--job', 'game-odds')).toEqual(['0x04', '0x03', '0x01'])
    expect(await listed('--job', '3f1c7d2a-6b1e-4f0a-9c55-0a1b2c3d4e02')).toEqual(['0x02'])
    expect(await listed('--requester', requester(1).toUpperCase().replace('0X', '0x'))).toEqual([
      '0x01',
    ])
    expect(await listed('--since', between)).toEqual(['0x04', '0x03'])
    expect(await listed('--since', '1d', '--state', 'fulfilled', '--limit', '1')).toEqual(['0x04'])
  }, 120_000)

  it('a table for people; a filter it cannot read is refused, naming it', async () => {
    const env = { REDIS_URL: testRedisUrl(), QUEUE_PREFIX: prefix }
    const table = await runFeedrunner(['runs', 'list', '--state', 'errored'], env)
    expect(table.stdout).toMatch(
      /^run\s+trigger\s+chain\s+job\s+state\s+received\s+requester\s+reason$/m,
    )
    expect(table.stdout).toMatch(/^0x0101010101\S*\s+request\s+31337\s+datafeed game-odds/m)
    const triggers = await runFeedrunner(['runs', 'list', '--trigger', 'block'], env)
    expect(triggers.code).toBe(1)
    expect(triggers.stderr.trim()).toBe(
      '--trigger block: expected one of request, tick, call, round',
    )
    const refused = await runFeedrunner(['runs', 'list', '--since', 'last tuesday'], env)
    expect(refused.code).toBe(1)
    expect(refused.stderr.trim()).toBe(
      '--since last tuesday: expected an age (30m, 6h, 2d) or a date and time (2026-01-31T12:00Z)',
    )
  }, 60_000)
})

describe('jobs list --running', () => {
  it("the jobs the running runners say they serve, per chain, not the folder's files", async () => {
    const prefix = uniquePrefix('jobs-running')
    const env = { REDIS_URL: testRedisUrl(), QUEUE_PREFIX: prefix }
    const none = await runFeedrunner(['jobs', 'list', '--running'], env)
    expect(none.stdout).toContain(`no runner serves jobs under queue prefix ${prefix}`)

    // What a runner of chain 31337 publishes: the shipped specs but one.
    const registry = await loadJobRegistry(join(projectRoot, 'jobs'), 31337)
    registry.replace(registry.jobs.slice(1), registry.notices)
    const redis = await connectClient(testRedisUrl())
    const published = publishLoadedJobs(redis, prefix, new Map([[31337, registry]]))
    try {
      published.refused('jobs/broken.toml: line 3: unknown task type frobnicate')
      const shown = await runFeedrunner(['jobs', 'list', '--running', '--json'], env)
      expect(shown.code, shown.stderr).toBe(0)
      const [chain, ...more] = JSON.parse(shown.stdout) as Array<{
        chainId: number
        jobs: { externalJobId: string }[]
        refused?: string
      }>
      expect(more).toEqual([])
      expect(chain!.chainId).toBe(31337)
      expect(chain!.jobs.map((job) => job.externalJobId)).toEqual(
        registry.jobs.map((loaded) => loaded.externalJobId),
      )
      expect(chain!.refused).toContain('unknown task type frobnicate')
      const table = await runFeedrunner(['jobs', 'list', '--running'], env)
      expect(table.stdout).toMatch(/^chain\s+job\s+externalJobID\s+file$/m)
      expect(table.stdout).toContain('refused the last change of the jobs folder')
    } finally {
      published.stop()
      redis.disconnect()
    }
  }, 60_000)
})
