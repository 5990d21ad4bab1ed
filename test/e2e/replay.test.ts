import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseEther } from 'ethers'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ORACLE_RESPONSE_TOPIC } from '../../src/chain/operator.ts'
import { createLogger } from '../../src/config/logger.ts'
import { metricsText } from '../../src/metrics/index.ts'
import { waitFor } from '../../src/dev/process.ts'
import { sendConsumerRequests } from '../../src/dev/requests.ts'
import { startDevStack, type DevStack } from '../../src/dev/stack.ts'
import type { Runner } from '../../src/runner/runner.ts'
import { startRunnerFromSettings } from '../../src/runner/start.ts'
import { sendJson, startTestServer, type TestServer } from '../pipeline/support/http-server.ts'
import { parsePrometheus, valueOf } from '../operations/support.ts'
import { testRedisUrl, uniquePrefix } from '../support/redis.ts'
import { runFeedrunner } from './support/cli.ts'

// game-odds through a bridge of its own, whose URL is first wrong (a server that answers 404).
const spec = readFileSync(join(import.meta.dirname, '../../jobs/game-odds.toml'), 'utf8')
  .replace(/^name = .*$/m, 'name = "fixable game-odds"')
  .replace(/^externalJobID = .*$/m, 'externalJobID = "5e91a7c0-0000-4000-8000-00000000f1c5"')
  .replace('name="datafeed"', 'name="fixable"')
const JOB = 'fixable game-odds'
const GAME_ODDS_PARAMS: Array<[string, string]> = [
  ['region', 'england'],
  ['sport', 'soccer'],
  ['league', 'epl'],
  ['date', '2024-08-16'],
  ['homeTeam', 'Man United'],
  ['path', '$.data.homeMoneyLine'],
  ['times', '100'],
]
const PAYMENT = parseEther('0.5')

// Each test spawns feedrunner commands (a few seconds each on two loaded cores): the bound only catches a hang.
describe(
  'runs replay: an errored run, its cause fixed, runs again on the same open request',
  { timeout: 240_000 },
  () => {
    const jobsDir = mkdtempSync(join(tmpdir(), 'feedrunner-replay-'))
    let wrongBridge: TestServer
    let stack: DevStack
    let fixedRunner: Runner | undefined
    let cliEnv: NodeJS.ProcessEnv
    let fixedOne: string
    let expiring: string
    let withdrawableBefore: bigint

    const run = (requestId: string) => stack.runner!.runs.get(requestId)
    const withdrawable = async () =>
      (await stack.contracts.operator.getFunction('withdrawable')()) as bigint

    beforeAll(async () => {
      writeFileSync(join(jobsDir, 'fixable.toml'), spec)
      wrongBridge = await startTestServer((_request, response) =>
        sendJson(response, 404, { error: 'no such endpoint here' }),
      )
      stack = await startDevStack({
        env: {
          ...process.env,
          REDIS_URL: testRedisUrl(),
          JOBS_DIR: jobsDir,
          LOG_LEVEL: 'warn',
          EA_PORT: '',
          BRIDGE_FIXABLE_URL: `${wrongBridge.url}/wrong`,
        },
        prefix: uniquePrefix('replay'),
      })
      cliEnv = {
        REDIS_URL: stack.redisUrl,
        QUEUE_PREFIX: stack.env.QUEUE_PREFIX,
        RPC_URL: stack.rpcUrl,
      }
      withdrawableBefore = await withdrawable()
      const externalJobId = stack.runner!.registry.byName(JOB)!.externalJobId
      const sent = await sendConsumerRequests(
        stack.contracts.consumer,
        stack.contracts.deployer,
        [0, 1].map(() => ({
          externalJobId,
          valueType: 'uint256' as const,
          params: GAME_ODDS_PARAMS,
          payment: PAYMENT,
        })),
      )
      ;[fixedOne, expiring] = sent.map((request) => request.requestId) as [string, string]
      for (const requestId of [fixedOne, expiring])
        await waitFor(
          `request ${requestId} to error`,
          async () => (await run(requestId))?.state === 'errored',
          60_000,
        )
    })

    afterAll(async () => {
      await fixedRunner?.stop()
      await stack?.stop()
      await wrongBridge?.close()
    })

    it('the errored run says why, and `runs show` says what the requester can do while the payment is escrowed', async () => {
      expect((await run(fixedOne))?.reason).toContain('404')
      // Escrowed: the Operator has the payments but cannot withdraw them.
      expect(await withdrawable()).toBe(withdrawableBefore)
      const shown = await runFeedrunner(['runs', 'show', fixedOne], cliEnv)
      expect(shown.code).toBe(0)
      expect(shown.stdout).toMatch(
        new RegExp(
          `paid 0\\.5 LINK; it stays escrowed in the Operator ${stack.contracts.addresses.operator} until the request's cancelExpiration, \\S+ \\(\\d+ min \\d+ s from now\\)`,
        ),
      )
      expect(shown.stdout).toContain(`feedrunner runs replay ${fixedOne}`)
      expect(shown.stdout).toContain(`the consumer can call cancelOracleRequest(${fixedOne}`)
    })

    it('after the bridge URL is fixed, the replay stores the value; the Operator is paid once', async () => {
      // The operator fixes BRIDGE_FIXABLE_URL and restarts the runner.
      await stack.runner!.stop()
      fixedRunner = await startRunnerFromSettings(
        stack.settings,
        createLogger(stack.settings, 'replay-test'),
        { env: { ...process.env, ...stack.env, BRIDGE_FIXABLE_URL: stack.adapter.url } },
      )
      const replayed = await runFeedrunner(['runs', 'replay', fixedOne], cliEnv)
      expect(replayed.stderr).toBe('')
      expect(replayed.code).toBe(0)
      expect(replayed.stdout).toContain(`replay 1 of request ${fixedOne} (job ${JOB}) is queued`)
      await waitFor(
        'the replay to fulfil',
        async () => (await fixedRunner!.runs.get(fixedOne))?.state === 'fulfilled',
        60_000,
      )
      // The value is on chain, the Operator was paid exactly once, and answered once.
      expect(await stack.contracts.consumer.getFunction('uint256Value')(fixedOne)).toBe(160n)
      expect(await withdrawable()).toBe(withdrawableBefore + PAYMENT)
      const responses = await stack.contracts.provider.getLogs({
        address: stack.contracts.addresses.operator,
        topics: [ORACLE_RESPONSE_TOPIC, fixedOne],
        fromBlock: 0,
      })
      expect(responses).toHaveLength(1)
      const record = await fixedRunner!.runs.get(fixedOne)
      expect(record?.replays).toEqual([
        { at: expect.any(Number), previousReason: expect.stringContaining('404') },
      ])
      const samples = parsePrometheus(await metricsText())
      expect(valueOf(samples, 'feedrunner_replays_total', { job: JOB, state: 'fulfilled' })).toBe(1)
      const shown = await runFeedrunner(['runs', 'show', fixedOne], cliEnv)
      expect(shown.stdout).toMatch(/replay 1 at \S+, after: .*404/)
    })

    it('replaying it again is refused, saying it was fulfilled', async () => {
      const again = await runFeedrunner(['runs', 'replay', fixedOne], cliEnv)
      expect(again.code).toBe(1)
      expect(again.stderr).toContain(
        `not replayed: the run of request ${fixedOne} is fulfilled (transaction 0x`,
      )
      expect(await withdrawable()).toBe(withdrawableBefore + PAYMENT)
    })

    it('a request past its cancelExpiration is refused, and so is one its requester cancelled', async () => {
      const { provider } = stack.contracts
      const record = (await fixedRunner!.runs.get(expiring))!
      expect(record.state).toBe('errored')
      // Chain time, not the clock: five minutes and a second later on the dev chain.
      await provider.send('evm_increaseTime', [301])
      await provider.send('evm_mine', [])
      const expired = await runFeedrunner(['runs', 'replay', expiring], cliEnv)
      expect(expired.code).toBe(1)
      expect(expired.stderr).toContain(
        `not replayed: request ${expiring} passed its cancelExpiration at`,
      )
      const cancel = await stack.contracts.consumer.getFunction('cancelRequest')(
        expiring,
        BigInt(record.cancelExpiration!),
      )
      const cancelled = await cancel.wait()
      const refused = await runFeedrunner(['runs', 'replay', expiring], cliEnv)
      expect(refused.code).toBe(1)
      expect(refused.stderr).toContain(
        `not replayed: request ${expiring} was cancelled by its requester in transaction ${cancelled.hash}`,
      )
      expect((await fixedRunner!.runs.get(expiring))?.replays).toBeUndefined()
    })
  },
)
