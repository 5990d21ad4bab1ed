import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Contract, JsonRpcProvider } from 'ethers'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ANVIL_PRIVATE_KEYS } from '../../src/dev/anvil.ts'
import { freePort } from '../../src/dev/ports.ts'
import { startOwnedProcess, waitFor, type OwnedProcess } from '../../src/dev/process.ts'
import { devStateSchema, type DevState } from '../../src/dev/state.ts'
import { testRedisUrl } from '../support/redis.ts'
import { runFeedrunner, type CliResult } from './support/cli.ts'

// Issue 39 as a new operator met it after the first hour, on dev stacks started as `npm start`
// starts them: two stacks given one Redis keep their own records (point 4); a spec added, changed,
// broken or removed while a stack runs (point 3), including one for an Operator deployed meanwhile;
// `request` refusing to guess a scale (point 5); read commands for people and programs (point 7).

const projectRoot = join(import.meta.dirname, '../..')
const bin = join(projectRoot, 'bin/feedrunner.js')
const GAME_ODDS = readFileSync(join(projectRoot, 'jobs/game-odds.toml'), 'utf8')
const NODE_ADDRESS = '0x70997970C51812dc3A010C7d01b50e0d17dc79C8'

/** game-odds under another name and externalJobID. */
function oddsCopy(text: string, name: string, id: string): string {
  return text
    .replace(/^name = .*$/m, `name = "${name}"`)
    .replace(/^externalJobID = .*$/m, `externalJobID = "${id}"`)
}

interface Stack {
  process: OwnedProcess
  state: DevState
  stateFile: string
  jobsDir: string
}

describe('beyond the first hour: a dev stack of its own, jobs that change, no guessing', () => {
  const dir = mkdtempSync(join(tmpdir(), 'feedrunner-own-stack-'))
  const stacks: Stack[] = []
  let a: Stack
  let b: Stack

  /** A second terminal of the checkout: nothing but where the stack recorded itself. */
  function terminal(stack: Stack, extra: Record<string, string> = {}): NodeJS.ProcessEnv {
    const env: NodeJS.ProcessEnv = { ...process.env, DEV_STATE_FILE: stack.stateFile, ...extra }
    for (const name of ['REDIS_URL', 'QUEUE_PREFIX', 'RPC_URL', 'JOBS_DIR', 'EA_PORT'])
      if (!(name in extra)) delete env[name]
    for (const name of Object.keys(env))
      if (name.startsWith('BRIDGE_') && !(name in extra)) delete env[name]
    return env
  }

  function cli(stack: Stack, args: string[], extra: Record<string, string> = {}) {
    return runFeedrunner(args, terminal(stack, extra), 240_000)
  }

  async function startStack(name: string, jobs: string[], env: Record<string, string> = {}) {
    const jobsDir = join(dir, `${name}-jobs`)
    mkdirSync(jobsDir)
    for (const job of jobs) copyFileSync(join(projectRoot, 'jobs', job), join(jobsDir, job))
    const stateFile = join(dir, `${name}.json`)
    const stackEnv = terminal({ stateFile } as Stack, {
      // One Redis for every stack of this test, as two checkouts given the same REDIS_URL.
      REDIS_URL: testRedisUrl(),
      JOBS_DIR: jobsDir,
      LOG_LEVEL: 'info',
      LOG_FORMAT: 'json',
      ...env,
    })
    const started = startOwnedProcess(`feedrunner dev (${name})`, process.execPath, [bin, 'dev'], {
      cwd: projectRoot,
      env: stackEnv,
      keepOutputChars: Infinity,
      stopGraceMs: 15_000,
    })
    return { process: started, stateFile, jobsDir }
  }

  async function ready(partial: Omit<Stack, 'state'>): Promise<Stack> {
    await waitFor(
      `${partial.process.name} to be ready; its output so far:\n${partial.process.output().slice(-4000)}`,
      async () => partial.process.output().includes('feedrunner dev ready'),
      300_000,
      200,
    )
    const stack = {
      ...partial,
      state: devStateSchema.parse(JSON.parse(readFileSync(partial.stateFile, 'utf8'))),
    }
    stacks.push(stack)
    return stack
  }

  beforeAll(async () => {
    // Both at once: two checkouts started side by side.
    const [startA, startB] = [
      await startStack('a', ['game-odds.toml']),
      await startStack('b', ['weather-current.toml']),
    ]
    ;[a, b] = [await ready(startA), await ready(startB)]
  }, 620_000)

  afterAll(async () => {
    for (const stack of stacks.reverse()) await stack.process.stop()
    rmSync(dir, { recursive: true, force: true })
  })

  const expectFulfilled = (result: CliResult, value: string) => {
    expect(result.code, result.stdout + result.stderr).toBe(0)
    expect(result.stdout).toMatch(new RegExp(`^0x[0-9a-f]{64} {2}${value} {2}\\(\\d+ ms\\)$`, 'm'))
  }

  describe('two dev stacks on one Redis (point 4)', () => {
    it('each keeps its queues and runs under a prefix of its own', async () => {
      expect(a.state.redisUrl).toBe(testRedisUrl())
      expect(b.state.redisUrl).toBe(testRedisUrl())
      expect(a.state.queuePrefix).toMatch(/^feedrunner-dev-[0-9a-f]{8}$/)
      expect(b.state.queuePrefix).toMatch(/^feedrunner-dev-[0-9a-f]{8}$/)
      expect(a.state.queuePrefix).not.toBe(b.state.queuePrefix)
      // Two fresh chains: the same request ids on both, which must still not mix.
      expectFulfilled(await cli(a, ['request', 'game-odds']), '160')
      const weather = await cli(b, ['request', 'weather-current'])
      expect(weather.code, weather.stdout + weather.stderr).toBe(0)
    }, 300_000)

    it('status, runs show and the dashboard show their own stack alone', async () => {
      for (const [stack, own, other] of [
        [a, 'game-odds', 'weather-current'],
        [b, 'weather-current', 'game-odds'],
      ] as const) {
        const status = await cli(stack, ['status', '--json'])
        expect(status.code, status.stderr).toBe(0)
        const report = JSON.parse(status.stdout) as {
          runs: Array<{ job: string; requestId: string }>
        }
        expect(report.runs).toHaveLength(1)
        expect(report.runs[0]!.job).toContain(own)
        const shown = await cli(stack, ['runs', 'show', report.runs[0]!.requestId, '--json'])
        expect(shown.code, shown.stderr).toBe(0)
        expect((JSON.parse(shown.stdout) as { job: string }).job).toContain(own)
        const page = await (await fetch(stack.state.dashboardUrl!)).text()
        expect(page).toContain(own)
        expect(page).not.toContain(other)
      }
    }, 120_000)

    it('a third stack given the prefix of the first refuses to start, naming it, and leaves it alone', async () => {
      const third = await startStack('c', ['game-odds.toml'], { QUEUE_PREFIX: a.state.queuePrefix })
      const exit = await third.process.exited
      expect(exit.code).toBe(1)
      const output = third.process.output()
      expect(output).toContain(
        `queue prefix ${a.state.queuePrefix} on REDIS_URL ${new URL(testRedisUrl()).host} belongs to another dev stack (pid ${a.state.pid}`,
      )
      expect(output).toContain('give this one a QUEUE_PREFIX of its own')
      // The first stack's records are still there.
      const status = await cli(a, ['status', '--json'])
      expect((JSON.parse(status.stdout) as { runs: unknown[] }).runs).toHaveLength(1)
    }, 300_000)
  })

  describe('a request that cannot tell the scale (point 5)', () => {
    it('refuses, names --param times, and sends nothing', async () => {
      const provider = new JsonRpcProvider(a.state.rpcUrl)
      const consumer = new Contract(
        a.state.contracts.consumer,
        ['function requestCount() view returns (uint256)'],
        provider,
      )
      try {
        const before = (await consumer.getFunction('requestCount')()) as bigint
        // An adapter that does not answer: the endpoint's scale cannot be read from it.
        const refused = await cli(a, ['request', 'game-odds'], {
          BRIDGE_DATAFEED_URL: `http://127.0.0.1:${await freePort()}`,
        })
        expect(refused.code).toBe(1)
        expect(refused.stderr).toContain('scales its answer by the request parameter times')
        expect(refused.stderr).toContain('give it, e.g. --param times=100 to keep two decimals')
        expect(refused.stdout).not.toMatch(/fulfilled|0x[0-9a-f]{64} /)
        expect(await consumer.getFunction('requestCount')()).toBe(before)
      } finally {
        provider.destroy()
      }
    }, 120_000)
  })

  describe('jobs that change while the stack runs (point 3)', () => {
    const lines = () =>
      a.process
        .output()
        .split('\n')
        .filter((line) => line.startsWith('{'))
        .map((line) => JSON.parse(line) as { level: number; msg: string; trigger?: string })
    const logged = (pattern: RegExp) =>
      waitFor(
        `a log line ${pattern}`,
        async () => lines().some((line) => pattern.test(line.msg)),
        30_000,
      )

    it('a spec added is loaded without a restart, said in one line, and answered', async () => {
      writeFileSync(
        join(a.jobsDir, 'odds-copy.toml'),
        oddsCopy(GAME_ODDS, 'odds copy', '3f1c7d2a-6b1e-4f0a-9c55-0a1b2c3d4e91'),
      )
      await logged(/^job added: odds copy \(externalJobID 3f1c7d2a-6b1e-4f0a-9c55-0a1b2c3d4e91/)
      expectFulfilled(await cli(a, ['request', 'odds-copy']), '160')
    }, 120_000)

    it('a broken spec keeps the jobs running and says why; SIGHUP reloads too', async () => {
      writeFileSync(join(a.jobsDir, 'broken.toml'), 'type = "directrequest"\nname = "broken"\n')
      await logged(/^job specs not reloaded, the jobs loaded before still run: .*broken\.toml/)
      const status = await cli(a, ['status'])
      expect(status.stdout).toContain(
        'the runner of chain 31337 refused the last change of the jobs folder, and runs the jobs it had: ',
      )
      // The jobs loaded before still run, and `request` says what is wrong with the broken one.
      expectFulfilled(await cli(a, ['request', 'odds-copy']), '160')
      const broken = await cli(a, ['request', 'broken'])
      expect(broken.code).toBe(1)
      expect(broken.stderr).toContain('broken.toml: contractAddress is required')
      rmSync(join(a.jobsDir, 'broken.toml'))
      await logged(/^job specs reloaded: every spec loads, no job changed$/)
      process.kill(a.state.pid, 'SIGHUP')
      await waitFor(
        'the SIGHUP reload',
        async () => lines().some((line) => line.trigger === 'SIGHUP'),
        30_000,
      )
      expect(a.process.child.exitCode).toBeNull()
    }, 180_000)

    it('a spec for an Operator deployed meanwhile is refused until the Operator knows the key, then watched', async () => {
      const deploy = await cli(
        a,
        [
          'operator',
          'deploy',
          '--owner-key-env',
          'OWNER_KEY',
          '--link',
          a.state.contracts.linkToken,
          '--consumer',
          '--json',
        ],
        { OWNER_KEY: ANVIL_PRIVATE_KEYS[0] },
      )
      expect(deploy.code, deploy.stderr).toBe(0)
      const second = JSON.parse(deploy.stdout) as { operator: string; consumer: string }
      const moved = join(dir, 'moved')
      const retarget = await cli(a, [
        'jobs',
        'retarget',
        join(a.jobsDir, 'game-odds.toml'),
        '--operator',
        second.operator,
        '--out',
        moved,
      ])
      expect(retarget.code, retarget.stderr).toBe(0)
      writeFileSync(
        join(a.jobsDir, 'second-odds.toml'),
        oddsCopy(
          readFileSync(join(moved, 'game-odds.toml'), 'utf8'),
          'second odds',
          '3f1c7d2a-6b1e-4f0a-9c55-0a1b2c3d4e92',
        ),
      )
      // The Operator does not know the node's key yet: the spec is refused, the old set runs on.
      await logged(
        new RegExp(`^job specs not reloaded, .*not authorised by the Operator ${second.operator}`),
      )
      const authorize = await cli(
        a,
        [
          'operator',
          'authorize',
          '--operator',
          second.operator,
          '--owner-key-env',
          'OWNER_KEY',
          '--sender',
          NODE_ADDRESS,
        ],
        { OWNER_KEY: ANVIL_PRIVATE_KEYS[0] },
      )
      expect(authorize.code, authorize.stderr).toBe(0)
      process.kill(a.state.pid, 'SIGHUP')
      await logged(new RegExp(`^job added: second odds .*Operator ${second.operator}\\)$`))
      expectFulfilled(
        await cli(a, ['request', 'second-odds'], { CONSUMER_ADDRESS: second.consumer }),
        '160',
      )
    }, 240_000)

    it('a job the running stack does not serve is refused at once, saying what it serves', async () => {
      const elsewhere = join(dir, 'elsewhere')
      mkdirSync(elsewhere)
      writeFileSync(
        join(elsewhere, 'odds-elsewhere.toml'),
        oddsCopy(GAME_ODDS, 'odds elsewhere', '3f1c7d2a-6b1e-4f0a-9c55-0a1b2c3d4e93'),
      )
      const refused = await cli(a, ['request', 'odds-elsewhere'], { JOBS_DIR: elsewhere })
      expect(refused.code).toBe(1)
      expect(refused.stderr).toContain(
        `the running feedrunner (queue prefix ${a.state.queuePrefix}, chain 31337) does not serve job odds elsewhere`,
      )
      expect(refused.stderr).toContain('it serves datafeed game-odds (uint256)')
      expect(refused.stderr).toContain('Nothing was sent.')
    }, 120_000)

    it('a spec removed is dropped, said in one line', async () => {
      rmSync(join(a.jobsDir, 'odds-copy.toml'))
      await logged(/^job removed: odds copy /)
      const gone = await cli(a, ['request', 'odds-copy'])
      expect(gone.code).toBe(1)
      expect(gone.stderr).toContain('no job "odds-copy"')
      // Each change was said once.
      expect(lines().filter((line) => line.msg.startsWith('job added: odds copy'))).toHaveLength(1)
    }, 120_000)
  })

  describe('read commands for people and for programs (point 7)', () => {
    it('with --json, JSON alone on stdout; without, a readable table', async () => {
      for (const args of [['status'], ['jobs', 'validate']]) {
        const json = await cli(a, [...args, '--json'], { JOBS_DIR: a.jobsDir })
        expect(json.code, json.stderr).toBe(0)
        expect(() => JSON.parse(json.stdout), args.join(' ')).not.toThrow()
      }
      const status = JSON.parse((await cli(a, ['status', '--json'])).stdout) as {
        runs: Array<{ requestId: string }>
      }
      const id = status.runs[0]!.requestId
      const json = await cli(a, ['runs', 'show', id, '--json'])
      expect(JSON.parse(json.stdout)).toMatchObject({ requestId: id, state: 'fulfilled' })
      const readable = await cli(a, ['runs', 'show', id.slice(0, 12)])
      expect(readable.code, readable.stderr).toBe(0)
      expect(readable.stdout).toMatch(/^state\s+fulfilled$/m)
      expect(readable.stdout).toMatch(/^task\s+type\s+ms\s+output$/m)
      expect(readable.stdout).toMatch(/^parse\s+jsonparse\s+\d+\s+160$/m)
      expect(() => JSON.parse(readable.stdout)).toThrow()
    }, 120_000)

    it('the dev stack does not warn that metrics are off while it serves /metrics', () => {
      for (const stack of [a, b]) {
        expect(stack.process.output()).not.toContain('METRICS_ENABLED has been set to false')
        expect(stack.process.output()).not.toContain('raw keys')
      }
    })
  })
})
