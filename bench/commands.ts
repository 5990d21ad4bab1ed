/**
 * Read commands' wall time (`npm run bench:commands`): `--version`, `status`, `runs list`,
 * `runs show`, `jobs list` and `jobs list --running`, each started as an operator starts it
 * (`node bin/feedrunner.js ...`, a new process each time), beside `node -e 0` (Node starting and doing
 * nothing) in the same run. Each round runs every command once, each right after a `node -e 0` of its
 * own, so a change in the machine's load hits both alike; the table gives the median, the fastest and
 * the slowest of BENCH_ROUNDS rounds (default 7) and the median of what each command took beyond
 * `node -e 0`.
 *
 * The commands read a private redis-server the bench starts, under a prefix it fills with a few runs,
 * a requests queue with a job and a runner's loaded jobs, so each command reads and prints what it
 * would on a node. A dist/ older than src/ is built first (`npm run build`): otherwise the CLI runs the
 * sources through tsx, which is not what an install runs. `--json` prints the figures as JSON.
 * `BENCH_VIA=npx` starts each command as `npx --no-install feedrunner ...` instead, as the docs'
 * examples do: npm's own lookup of the package is then part of each figure.
 */
import { spawnSync } from 'node:child_process'
import { Queue } from 'bullmq'
import { builtFingerprint, sourceFingerprint } from '../bin/source-fingerprint.js'
import { connectClient } from '../src/queue/connection.ts'
import { startPrivateRedis } from '../src/dev/redis.ts'
import { RunStore } from '../src/runner/run-record.ts'

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 7)
const VIA_NPX = process.env.BENCH_VIA === 'npx'
const PREFIX = 'bench-commands'
const CHAIN_ID = 31337
const root = new URL('..', import.meta.url).pathname
const json = process.argv.includes('--json')

interface Timed {
  label: string
  args: readonly string[]
}

const REQUEST_ID = `0x${'ab'.repeat(32)}`
const COMMANDS: readonly Timed[] = [
  { label: '--version', args: ['--version'] },
  { label: 'status', args: ['status'] },
  { label: 'runs list', args: ['runs', 'list'] },
  { label: 'runs show', args: ['runs', 'show', REQUEST_ID.slice(0, 10)] },
  { label: 'jobs list', args: ['jobs', 'list'] },
  { label: 'jobs list --running', args: ['jobs', 'list', '--running'] },
]

function ensureBuilt(): void {
  if (builtFingerprint(`${root}dist`) === sourceFingerprint(`${root}src`)) return
  console.error('bench: dist/ is not built from src/ as it is now; building it first')
  const built = spawnSync('npm', ['run', 'build'], { cwd: root, stdio: 'inherit' })
  if (built.status !== 0) throw new Error('bench: npm run build failed')
}

/** A few runs, a requests queue with a job waiting, and a runner's loaded jobs, under PREFIX. */
async function seed(redisUrl: string): Promise<void> {
  const redis = await connectClient(redisUrl)
  const runs = new RunStore(redis, `${PREFIX}:runner`, CHAIN_ID)
  for (let index = 0; index < 30; index += 1) {
    const requestId = index === 0 ? REQUEST_ID : `0x${index.toString(16).padStart(64, '0')}`
    await runs.create(requestId, {
      state: index % 5 === 0 ? 'errored' : 'fulfilled',
      chainId: CHAIN_ID,
      operator: '0x5FbDB2315678afecb367f032d93F642f64180aa3',
      job: 'game-odds',
      externalJobId: '3f1c7d2a-6b1e-4f0a-9c55-0a1b2c3d4e01',
      requester: '0x9fE46736679d2D9a65F0992F2272dE9f3c7fa6e0',
      payment: '100000000000000000',
      blockNumber: 100 + index,
      requestTxHash: `0x${'cd'.repeat(32)}`,
      reason: index % 5 === 0 ? 'the bridge answered 502' : undefined,
      tasks: [{ id: 'fetch', type: 'bridge', output: { result: 42 }, ms: 12 }],
    })
  }
  const queue = new Queue(`requests-${CHAIN_ID}`, { connection: redis, prefix: PREFIX })
  await queue.add('request', { requestId: REQUEST_ID })
  await queue.close()
  await redis.set(
    `${PREFIX}:runner:loaded-jobs:${CHAIN_ID}`,
    JSON.stringify({
      at: Date.now(),
      jobs: [{ name: 'game-odds', externalJobId: 'x', file: 'jobs/game-odds.toml' }],
    }),
    'PX',
    600_000,
  )
  redis.disconnect()
}

/** Wall milliseconds of one process from spawn to exit; a command that fails stops the bench. */
function timed(
  args: readonly string[],
  env: NodeJS.ProcessEnv,
  command = process.execPath,
): number {
  const started = performance.now()
  const child = spawnSync(command, args, { cwd: root, env, encoding: 'utf8' })
  const ms = performance.now() - started
  if (child.status !== 0)
    throw new Error(`bench: ${args.join(' ')} exited ${child.status}: ${child.stderr.trim()}`)
  return ms
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b)
  const middle = Math.floor(sorted.length / 2)
  return sorted.length % 2 === 1
    ? (sorted[middle] as number)
    : ((sorted[middle - 1] as number) + (sorted[middle] as number)) / 2
}

ensureBuilt()
const redis = await startPrivateRedis()
try {
  await seed(redis.url)
  // The dev stack of this checkout, if one runs, is not what the commands read: REDIS_URL says.
  const env = { ...process.env, REDIS_URL: redis.url, QUEUE_PREFIX: PREFIX, NO_COLOR: '1' }
  const times = new Map<string, { command: number[]; baseline: number[] }>()
  for (const { label } of COMMANDS) times.set(label, { command: [], baseline: [] })
  for (let round = 0; round < ROUNDS; round += 1)
    for (const { label, args } of COMMANDS) {
      const entry = times.get(label)!
      entry.baseline.push(timed(['-e', '0'], env))
      entry.command.push(
        VIA_NPX
          ? timed(['--no-install', 'feedrunner', ...args], env, 'npx')
          : timed(['bin/feedrunner.js', ...args], env),
      )
    }
  const rows = COMMANDS.map(({ label }) => {
    const { command, baseline } = times.get(label)!
    return {
      command: label,
      medianMs: Math.round(median(command)),
      fastestMs: Math.round(Math.min(...command)),
      slowestMs: Math.round(Math.max(...command)),
      nodeMedianMs: Math.round(median(baseline)),
      beyondNodeMs: Math.round(median(command.map((ms, index) => ms - baseline[index]!))),
    }
  })
  if (json)
    console.log(
      JSON.stringify({ rounds: ROUNDS, via: VIA_NPX ? 'npx' : 'node', commands: rows }, null, 2),
    )
  else {
    console.log(
      `wall ms over ${ROUNDS} rounds, each command right after a node -e 0 of its own (${VIA_NPX ? 'npx --no-install feedrunner' : 'node bin/feedrunner.js'} ...)`,
    )
    console.log(
      `${'command'.padEnd(22)}${'median'.padStart(8)}${'fastest'.padStart(9)}${'slowest'.padStart(9)}${'node -e 0'.padStart(11)}${'beyond node'.padStart(13)}`,
    )
    for (const row of rows)
      console.log(
        `${row.command.padEnd(22)}${String(row.medianMs).padStart(8)}${String(row.fastestMs).padStart(9)}${String(row.slowestMs).padStart(9)}${String(row.nodeMedianMs).padStart(11)}${String(row.beyondNodeMs).padStart(13)}`,
      )
  }
} finally {
  await redis.stop()
}
