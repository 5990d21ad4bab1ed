import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { RunStore } from '../../src/runner/run-record.ts'
import { runFeedrunner } from '../e2e/support/cli.ts'
import { testRedisUrl, uniquePrefix } from '../support/redis.ts'

// The read commands start fast because they load only what they use: not the EA framework, the
// runner's BullMQ, solc, the metrics or the logger; the ones that print no job spec not ethers either
// (npm run bench:commands times them). Timings are the bench's; this holds what each one loads.

const trace = pathToFileURL(join(import.meta.dirname, '../support/module-trace.mjs')).href
const dir = mkdtempSync(join(tmpdir(), 'feedrunner-read-load-'))
const prefix = uniquePrefix('read-load')
const requestId = `0x${'5a'.repeat(32)}`
const redis = new Redis(testRedisUrl())

const NEVER = [
  '@chainlink/external-adapter-framework',
  'bullmq',
  'solc',
  'solc-0.8.19',
  'prom-client',
  'pino',
  'fastify',
  'hash-wasm',
]
/** What bin/feedrunner.js loads to run the sources when dist/ is not built from them (a checkout). */
const LAUNCHER = new Set(['tsx', 'esbuild', 'get-tsconfig', 'resolve-pkg-maps'])
/** Packages a command that reads no job spec has no use for. */
const CHAIN = ['ethers', 'undici', 'cbor-x']

/** The packages a `feedrunner ARGS` process loaded, and what it printed. */
async function loadedBy(args: readonly string[]): Promise<{ packages: Set<string>; out: string }> {
  const file = join(dir, `${args.join('-')}.txt`)
  const result = await runFeedrunner(args, {
    REDIS_URL: testRedisUrl(),
    QUEUE_PREFIX: prefix,
    MODULE_TRACE: file,
    NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} --import ${trace}`,
  })
  expect(result.code, result.stderr).toBe(0)
  const packages = new Set(
    readFileSync(file, 'utf8')
      .split('\n')
      .map((url) => /\/node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(url)?.[1])
      .filter((name): name is string => name !== undefined && !LAUNCHER.has(name)),
  )
  return { packages, out: result.stdout }
}

beforeAll(async () => {
  await new RunStore(redis, `${prefix}:runner`, 31337).create(requestId, {
    state: 'fulfilled',
    chainId: 31337,
    operator: '0x5FbDB2315678afecb367f032d93F642f64180aa3',
    job: 'game-odds',
    externalJobId: '3f1c7d2a-6b1e-4f0a-9c55-0a1b2c3d4e01',
    requester: '0x9fE46736679d2D9a65F0992F2272dE9f3c7fa6e0',
    payment: '100000000000000000',
    blockNumber: 7,
    requestTxHash: `0x${'cd'.repeat(32)}`,
  })
  // A requests queue as BullMQ leaves it: status finds a chain's queue by its meta key.
  await redis.hset(`${prefix}:requests-31337:meta`, 'version', 'bullmq:6')
  await redis.rpush(`${prefix}:requests-31337:wait`, '1')
})

afterAll(async () => {
  rmSync(dir, { recursive: true, force: true })
  redis.disconnect()
})

describe('read commands load only what they use', () => {
  it('feedrunner --version: no package at all', async () => {
    const { packages, out } = await loadedBy(['--version'])
    expect(out).toMatch(/^\d+\.\d+\.\d+\n$/)
    expect([...packages]).toEqual([])
  })

  it.each([
    [['runs', 'list'], /game-odds/],
    [['runs', 'show', requestId.slice(0, 12)], /0\.1 LINK/],
    [['jobs', 'list', '--running'], /no runner serves jobs/],
  ])('feedrunner %j: no chain code', async (args, printed) => {
    const { packages, out } = await loadedBy(args)
    expect(out).toMatch(printed)
    expect([...NEVER, ...CHAIN].filter((name) => packages.has(name))).toEqual([])
  })

  it.each([
    [['status'], /requests-31337\s+1\s/],
    [['jobs', 'list'], /game-odds/],
  ])('feedrunner %j: the job specs, not the runner', async (args, printed) => {
    const { packages, out } = await loadedBy(args)
    expect(out).toMatch(printed)
    expect(NEVER.filter((name) => packages.has(name))).toEqual([])
  })
})
