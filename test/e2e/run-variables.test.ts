import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createLogger } from '../../src/config/logger.ts'
import { parseSettings } from '../../src/config/settings.ts'
import { DEV_OPERATOR_ADDRESS } from '../../src/dev/deploy.ts'
import { waitFor } from '../../src/dev/process.ts'
import { sendConsumerRequests, waitForFulfilments } from '../../src/dev/requests.ts'
import { startDevStack, type DevStack } from '../../src/dev/stack.ts'
import { testRedisUrl, uniquePrefix } from '../support/redis.ts'
import {
  CHAINLINK_RUN_VARIABLES,
  everyVariableSpec,
  variableTaskId,
} from '../support/run-variables.ts'
import { runFeedrunner } from './support/cli.ts'

/**
 * Issue 55, point 3: `$(jobRun.meta.oracleRequest.requester)` passed `jobs validate` and `jobs run`
 * and failed every live run. One spec reads every variable Chainlink's directrequest delegate gives
 * a run and builds its fulfilment from `jobRun.meta.oracleRequest` alone: `jobs validate` accepts it,
 * `jobs run` gives each variable, the runner fulfils a request with it (the value read from the
 * chain), and `jobs run --tx` on that request gives every variable exactly as the live run did.
 */
const EXTERNAL_JOB_ID = '5d3c9a1e-7b2f-4e6d-8a0c-1f2e3d4c5b6a'
const SPEC_FILE = 'every-variable.toml'

interface TaskLine {
  id: string
  ok: boolean
  value?: unknown
  error?: string
}

describe('every run variable, validated, dry-run and live alike', { timeout: 300_000 }, () => {
  const jobsDir = mkdtempSync(join(tmpdir(), 'feedrunner-run-variables-'))
  const specPath = join(jobsDir, SPEC_FILE)
  let stack: DevStack
  let cliEnv: NodeJS.ProcessEnv

  beforeAll(async () => {
    writeFileSync(
      specPath,
      everyVariableSpec({
        externalJobID: EXTERNAL_JOB_ID,
        operator: DEV_OPERATOR_ADDRESS,
        evmChainID: '31337',
      }),
    )
    const env = {
      ...process.env,
      REDIS_URL: testRedisUrl(),
      JOBS_DIR: jobsDir,
      LOG_LEVEL: 'warn',
      EA_PORT: '',
    }
    stack = await startDevStack({
      env,
      prefix: uniquePrefix('run-variables'),
      logger: createLogger(parseSettings(env), 'run-variables-test'),
    })
    cliEnv = {
      REDIS_URL: stack.redisUrl,
      QUEUE_PREFIX: stack.env.QUEUE_PREFIX,
      RPC_URL: stack.rpcUrl,
      JOBS_DIR: jobsDir,
    }
  })
  afterAll(async () => {
    await stack?.stop()
  })

  async function dryRun(args: string[]): Promise<Map<string, TaskLine>> {
    const result = await runFeedrunner(['jobs', 'run', specPath, '--json', ...args], cliEnv)
    const output = JSON.parse(result.stdout.slice(result.stdout.indexOf('{'))) as {
      tasks: TaskLine[]
    }
    return new Map(output.tasks.map((task) => [task.id, task]))
  }

  it('validates, dry-runs, runs live and re-runs on the recorded request with one meaning', async () => {
    const validated = await runFeedrunner(['jobs', 'validate', specPath], cliEnv)
    expect(validated.stdout + validated.stderr).toContain('1 of 1 specs valid')

    const built = await dryRun(['--param', 'path=x'])
    for (const variable of CHAINLINK_RUN_VARIABLES) {
      const task = built.get(variableTaskId(variable))!
      // A request built for a dry run is in no block: what only a mined request has says so.
      if (/^jobRun\.(block\w+Root|logBlock\w+|logTxHash)$/.test(variable))
        expect(task.error, variable).toContain('with --tx or --log')
      else expect(task.ok, `${variable}: ${task.error}`).toBe(true)
    }
    expect(built.get(variableTaskId('jobRun.meta.oracleRequest.requester'))?.value).toBe(
      '0x000000000000000000000000000000000000dEaD',
    )

    const { consumer, deployer, provider } = stack.contracts
    const fromBlock = await provider.getBlockNumber()
    const [sent] = await sendConsumerRequests(consumer, deployer, [
      {
        externalJobId: EXTERNAL_JOB_ID,
        valueType: 'uint256',
        params: [['path', 'x']],
        payment: 10n ** 15n,
      },
    ])
    // The fulfilment was built from jobRun.meta.oracleRequest: its value is the dataVersion, 2.
    const answers = await waitForFulfilments(consumer, provider, [sent!.requestId], {
      fromBlock,
      timeoutMs: 120_000,
    })
    expect(answers.get(sent!.requestId)?.value).toBe(2n)
    await waitFor(
      'the run record to be fulfilled',
      async () => (await stack.runner!.runs.get(sent!.requestId))?.state === 'fulfilled',
      60_000,
    )
    const live = new Map(
      ((await stack.runner!.runs.get(sent!.requestId))?.tasks ?? []).map((task) => [task.id, task]),
    )
    // The requester is the consumer contract that paid the Operator.
    expect(live.get(variableTaskId('jobRun.meta.oracleRequest.requester'))?.output).toBe(
      stack.contracts.addresses.consumer,
    )

    const recorded = await dryRun(['--tx', sent!.txHash])
    for (const variable of CHAINLINK_RUN_VARIABLES) {
      const id = variableTaskId(variable)
      const liveTask = live.get(id)
      expect(liveTask?.error, `${variable} live`).toBeUndefined()
      expect(recorded.get(id)?.ok, `${variable} in jobs run --tx: ${recorded.get(id)?.error}`).toBe(
        true,
      )
      expect(recorded.get(id)?.value, variable).toEqual(liveTask?.output)
    }
  })
})
