import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Contract, ContractFactory, Interface, Wallet } from 'ethers'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { artifact } from '../../src/chain/artifacts.ts'
import { waitFor } from '../../src/dev/process.ts'
import { startDevStack, type DevStack } from '../../src/dev/stack.ts'
import { createRedisConnection } from '../../src/queue/connection.ts'
import { RunStore } from '../../src/runner/run-record.ts'
import { tickRunId } from '../../src/runner/ticks.ts'
import { testRedisUrl, uniquePrefix } from '../support/redis.ts'
import { startPart, stopPart, type PartProcess } from './support.ts'

const EVERY_MS = 2_000
const TICKS = 12
const EXTERNAL_JOB_ID = '6c1f0e2a-9b7d-4c3e-8a51-2f4d6e8b0c11'

/** A cron job writing each tick to the project's PushedValue, as the shipped cron job does. */
function cronSpec(pushed: string): string {
  return `type = "cron"
schemaVersion = 1
name = "pushed-every-2s"
externalJobID = "${EXTERNAL_JOB_ID}"
schedule = "@every 2s"
observationSource = """
  encode [type="ethabiencode" abi="push(int256 answer, uint256 tick)" data="{\\\\"answer\\\\": 4200, \\\\"tick\\\\": $(jobRun.meta.cron.tick)}"]
  submit [type="ethtx" to="${pushed}" data="$(encode)"]
  encode -> submit
"""
`
}

/**
 * A cron job `@every 2s` served by two runner processes sharing one Redis: every tick reaches the
 * chain once (read from PushedValue's logs), none twice, and none between the first and the last is
 * missing; each has its run record (trigger tick).
 */
describe('cron ticks: once across every runner sharing the Redis', () => {
  let stack: DevStack
  let pushed: Contract
  const runners: PartProcess[] = []
  const events = new Interface([
    'event ValuePushed(uint80 indexed roundId, uint256 indexed tick, int256 answer, uint256 updatedAt)',
  ])

  beforeAll(async () => {
    const jobsDir = mkdtempSync(join(tmpdir(), 'feedrunner-cron-'))
    stack = await startDevStack({
      env: { ...process.env, REDIS_URL: testRedisUrl(), LOG_LEVEL: 'warn', EA_PORT: '' },
      prefix: uniquePrefix('rel-cron'),
      runner: false,
    })
    const { deployer, artifacts } = stack.contracts
    const compiled = artifact(artifacts, 'PushedValue')
    const writer = new Wallet(stack.env.NODE_PRIVATE_KEY!).address
    const factory = new ContractFactory(compiled.abi as never, compiled.bytecode, deployer)
    pushed = (await (
      await factory.deploy(2, 'tick test', [writer])
    ).waitForDeployment()) as unknown as Contract
    writeFileSync(join(jobsDir, 'pushed.toml'), cronSpec(await pushed.getAddress()))
    const env = { ...stack.env, JOBS_DIR: jobsDir, RUNNER_LOCK_MS: '3000', LOG_LEVEL: 'info' }
    // Started together: a runner's first start waits for the node's pool to drain of the senders'
    // transactions (a listener without a checkpoint), which another runner's ticks keep filling.
    runners.push(...(await Promise.all([0, 1].map(() => startPart('runner', env, 240_000)))))
  }, 600_000)

  afterAll(async () => {
    for (const runner of runners) await stopPart(runner)
    await stack?.stop()
  })

  async function ticksOnChain(): Promise<number[]> {
    const logs = await stack.contracts.provider.getLogs({
      address: await pushed.getAddress(),
      topics: [events.getEvent('ValuePushed')!.topicHash],
      fromBlock: 0,
    })
    return logs.map((log) => Number(events.parseLog(log)!.args.tick))
  }

  it(`writes ${TICKS} ticks once each, none missing`, async () => {
    await waitFor(
      `${TICKS} ticks on chain`,
      async () => (await ticksOnChain()).length >= TICKS,
      180_000,
      500,
    ).catch(async (error: unknown) => {
      const seen = await ticksOnChain()
      throw new Error(
        `${(error as Error).message}: ${seen.length} on chain; the runners said:\n${runners.map((runner) => runner.output().slice(-3_000)).join('\n---\n')}`,
      )
    })
    const redis = createRedisConnection(stack.redisUrl, 'worker')
    const store = new RunStore(
      redis,
      `${stack.settings.QUEUE_PREFIX}:runner`,
      stack.contracts.chainId,
    )
    const runOf = (tick: number) => store.get(tickRunId(EXTERNAL_JOB_ID, tick))
    try {
      // The runs of the ticks on chain end fulfilled (their receipts deep enough) while the runners run.
      const written = await ticksOnChain()
      await waitFor(
        'the runs of the ticks on chain fulfilled',
        async () =>
          (await Promise.all(written.map(runOf))).every((run) => run?.state === 'fulfilled'),
        60_000,
        500,
      )
      for (const runner of runners) await stopPart(runner)
      runners.length = 0
      const ticks = (await ticksOnChain()).sort((a, b) => a - b)
      // Each tick is a multiple of the period by Redis's clock, on chain once.
      expect(new Set(ticks).size, `ticks on chain: ${ticks.join(', ')}`).toBe(ticks.length)
      for (const tick of ticks) expect(tick % EVERY_MS).toBe(0)
      const first = ticks[0]!
      const last = ticks.at(-1)!
      expect(
        ticks.length,
        `no tick between the first and the last missing: ${ticks.join(', ')}`,
      ).toBe((last - first) / EVERY_MS + 1)
      for (const tick of written)
        expect(await runOf(tick), `the run of tick ${tick}`).toMatchObject({
          trigger: 'tick',
          tickAt: tick,
          state: 'fulfilled',
        })
    } finally {
      redis.disconnect()
    }
  }, 300_000)
})
