import { spawn, type ChildProcess } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { freePort } from '../../src/dev/ports.ts'
import { waitFor } from '../../src/dev/process.ts'
import { devStateSchema, type DevState } from '../../src/dev/state.ts'
import { listeningAddresses, LOOPBACK_V4 } from '../support/listening.ts'
import { alive, descendants } from '../support/process-tree.ts'

// Issue 19 as a new operator met it: `npm start` in one terminal, then `demo`, `request` and
// `status` in another, with no variables; then SIGTERM to npm must leave no process of its tree.

const projectRoot = join(import.meta.dirname, '../..')
const bin = join(projectRoot, 'bin/feedrunner.js')

/** Variables that would tell a command where the stack is: the commands must not need them. */
const LOCATING_VARIABLES = ['REDIS_URL', 'QUEUE_PREFIX', 'RPC_URL', 'JOBS_DIR', 'EA_PORT']

/** The environment of a second terminal: nothing that says where the stack runs. */
function plainEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, ...extra }
  for (const name of LOCATING_VARIABLES) delete env[name]
  for (const name of Object.keys(env)) if (name.startsWith('BRIDGE_')) delete env[name]
  return env
}

interface Finished {
  code: number | null
  output: string
}

/** Runs `feedrunner <args>` to its end; the bound only catches a hang. */
function runCli(
  args: readonly string[],
  env: NodeJS.ProcessEnv,
  boundMs: number,
): Promise<Finished> {
  return new Promise((resolveRun, reject) => {
    const child = spawn(process.execPath, [bin, ...args], {
      cwd: projectRoot,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let output = ''
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()))
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()))
    const timer = setTimeout(() => {
      child.kill('SIGKILL')
      reject(
        new Error(`feedrunner ${args.join(' ')} had not ended after ${boundMs} ms:\n${output}`),
      )
    }, boundMs)
    child.once('exit', (code) => {
      clearTimeout(timer)
      resolveRun({ code, output })
    })
  })
}

describe('the first hour of a new operator (issue 19)', () => {
  const stateDir = mkdtempSync(join(tmpdir(), 'feedrunner-first-hour-'))
  // The test's own state file, so a developer's `npm start` in this checkout is left alone; the
  // commands get it and nothing else (the default, in the checkout, is tested below).
  const stateEnv = { DEV_STATE_FILE: join(stateDir, 'dev.json') }
  let npm: ChildProcess
  let output = ''
  let state: DevState
  const treePids = new Set<number>()
  let treeWatch: NodeJS.Timeout | undefined

  beforeAll(async () => {
    // Nothing answers at this REDIS_URL, so the stack starts a private redis-server on a random port.
    const closedRedis = `redis://127.0.0.1:${await freePort()}`
    npm = spawn('npm', ['start'], {
      cwd: projectRoot,
      env: { ...plainEnv(stateEnv), REDIS_URL: closedRedis, LOG_LEVEL: 'warn' },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    npm.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()))
    npm.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()))
    // Every process of the tree while it runs (anvil and redis-server start as it comes up).
    treeWatch = setInterval(() => {
      for (const pid of descendants(npm.pid!)) treePids.add(pid)
    }, 200)
    await waitFor(
      `npm start to print its ready line; its output so far:\n${output}`,
      async () => output.includes('feedrunner dev ready'),
      300_000,
      200,
    )
    state = devStateSchema.parse(JSON.parse(readFileSync(stateEnv.DEV_STATE_FILE, 'utf8')))
  }, 320_000)

  afterAll(() => {
    clearInterval(treeWatch)
    if (npm.exitCode === null) npm.kill('SIGKILL')
    for (const pid of treePids) if (alive(pid)) process.kill(pid, 'SIGKILL')
    rmSync(stateDir, { recursive: true, force: true })
  })

  it('prints where metrics and health are, serves them, and listens on loopback only', async () => {
    expect(output).toContain(state.metricsUrl)
    expect(output).toContain(state.healthUrl)
    const metrics = await fetch(state.metricsUrl)
    expect(metrics.status).toBe(200)
    expect(await metrics.text()).toContain('feedrunner_')
    expect((await fetch(state.healthUrl)).status).toBe(200)
    for (const url of [state.adapterUrl, state.feedServiceUrl, state.rpcUrl, state.redisUrl]) {
      const addresses = listeningAddresses(Number(new URL(url).port))
      expect(addresses.length, url).toBeGreaterThan(0)
      for (const address of addresses) expect(address, url).toBe(LOOPBACK_V4)
    }
  })

  it('demo beside the running stack passes', async () => {
    const demo = await runCli(['demo'], plainEnv(), 400_000)
    expect(demo.output).toMatch(/(\d+) of \1 requests fulfilled with the expected value/)
    expect(demo.code, demo.output).toBe(0)
  }, 420_000)

  it('then request with no parameters uses the documented example and is fulfilled on the stack demo ran beside', async () => {
    const request = await runCli(['request', 'game-odds'], plainEnv(stateEnv), 180_000)
    expect(request.output).toContain('using the documented example of game-odds')
    expect(request.output).toContain('homeTeam="Manchester United"')
    // The home odds of Manchester United v Fulham, 1.6, with two decimals kept.
    expect(request.output).toMatch(/0x[0-9a-f]{64} {2}160 {2}\(\d+ ms\)/)
    expect(request.output).toContain('1 of 1 fulfilled')
    expect(request.code, request.output).toBe(0)
  }, 200_000)

  it('status with no variables lists the run under an id runs show accepts', async () => {
    let status = await runCli(['status'], plainEnv(stateEnv), 60_000)
    const gameOddsRow = () =>
      status.output
        .split('\n')
        .find((line) => /^0x[0-9a-f]+ /.test(line) && line.includes('game-odds'))
    // The runner writes the run's end once its sender has seen the fulfilment's receipt, a poll or
    // two after the request command saw it on chain: on a loaded machine status may come between.
    await waitFor(
      'the run recorded fulfilled',
      async () => {
        status = await runCli(['status'], plainEnv(stateEnv), 60_000)
        return gameOddsRow()?.includes('fulfilled') === true
      },
      60_000,
      500,
    ).catch(() => undefined)
    expect(status.code, status.output).toBe(0)
    expect(status.output).toContain(`queue prefix ${state.queuePrefix}`)
    const row = gameOddsRow()
    expect(row, status.output).toBeDefined()
    expect(row).toContain('fulfilled')
    const shownId = row!.trim().split(/\s+/)[0]!
    const show = await runCli(['runs', 'show', shownId, '--json'], plainEnv(stateEnv), 60_000)
    expect(show.code, show.output).toBe(0)
    // The record as JSON, alone (notes for its requester would go to stderr).
    const run = JSON.parse(show.output) as {
      requestId: string
      state: string
      tasks: { id: string }[]
    }
    expect(run.requestId.startsWith(shownId)).toBe(true)
    expect(run.state).toBe('fulfilled')
    // Every task once, in order: the sent write stored those before the transaction, the last write
    // added the rest.
    const ids = run.tasks.map((task) => task.id)
    expect(ids[0]).toBe('decode_log')
    expect(ids.at(-1)).toBe('submit_tx')
    expect(new Set(ids).size).toBe(ids.length)
  }, 130_000)

  it('request returns once its run errored, root cause first, and exits non-zero', async () => {
    // No game on that day: the feed service answers 404 and the run errors. The bound is far below
    // --timeout, so a command that waited for the timeout would not end within it.
    const request = await runCli(
      [
        'request',
        'game-odds',
        '--timeout',
        '3600',
        // times given: without it `request` asks the adapter for the scale, and refuses at once
        // (the adapter's 404 said), so nothing reached the chain.
        ...['region=england', 'sport=soccer', 'league=epl', 'date=2024-01-01', 'times=100'].flatMap(
          (pair) => ['--param', pair],
        ),
        '--param',
        'homeTeam=Manchester United',
      ],
      plainEnv(stateEnv),
      240_000,
    )
    expect(request.code, request.output).toBe(1)
    expect(request.output).toContain('0 of 1 fulfilled')
    expect(request.output).toMatch(/0x[0-9a-f]{64} errored/)
    const lines = request.output.split('\n')
    const cause = lines.findIndex((line) => line.includes('cause: task fetch (bridge)'))
    expect(cause, request.output).toBeGreaterThan(-1)
    expect(lines[cause]).toContain('404')
    expect(request.output).not.toContain('not fulfilled within')
  }, 260_000)

  it('SIGTERM to npm start stops the whole tree: no process of it is left', async () => {
    const pids = [...treePids]
    // npm, its node (feedrunner dev), anvil and the private redis-server at least.
    expect(pids.length, output).toBeGreaterThanOrEqual(3)
    clearInterval(treeWatch)
    npm.kill('SIGTERM')
    await waitFor(
      `every process of the npm start tree to end (${pids.filter(alive).join(', ')} left)`,
      async () => npm.exitCode !== null || npm.signalCode !== null,
      30_000,
    )
    await waitFor(
      `every process of the npm start tree to end`,
      async () => pids.every((pid) => !alive(pid)),
      30_000,
    )
    expect(pids.filter(alive)).toEqual([])
    expect(existsSync(stateEnv.DEV_STATE_FILE)).toBe(false)
  }, 70_000)

  it('request with no stack running says so in one line', async () => {
    const request = await runCli(['request', 'game-odds'], plainEnv(stateEnv), 60_000)
    expect(request.code).toBe(1)
    expect(request.output.trim()).toMatch(/^no dev stack is running here: start one with npm start/)
    expect(request.output.trim().split('\n')).toHaveLength(1)
  }, 70_000)
})
