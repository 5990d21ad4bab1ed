import { execFile } from 'node:child_process'
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { Wallet } from 'ethers'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ANVIL_PRIVATE_KEYS } from '../../src/dev/anvil.ts'
import { loadJobRegistry } from '../../src/runner/job-registry.ts'
import { checkSendersAuthorised } from '../../src/runner/sender-authorisation.ts'
import { startTestChain, type TestChain } from '../chain/support.ts'
import { testRedisUrl, uniquePrefix } from '../support/redis.ts'

const root = join(import.meta.dirname, '../..')
const projectJobs = join(root, 'jobs')
const NODE_KEY = ANVIL_PRIVATE_KEYS[1]
// ANVIL_PRIVATE_KEYS[3] is one of anvil's funded keys; the dev contracts do not authorise it here.
const STRANGER_KEY = ANVIL_PRIVATE_KEYS[3]
const STRANGER = new Wallet(STRANGER_KEY).address

describe('sender keys the Operator does not authorise', () => {
  let chain: TestChain
  beforeAll(async () => {
    chain = await startTestChain({}, [NODE_KEY])
  })
  afterAll(async () => {
    await chain?.stop()
  })

  it('passes keys the Operator authorises, and names each key it does not by index and address, with its Operator, jobs and remedy', async () => {
    const registry = await loadJobRegistry(projectJobs, chain.dev.chainId)
    await expect(
      checkSendersAuthorised(chain.dev.provider, registry, [NODE_KEY]),
    ).resolves.toBeUndefined()
    const refusal = await checkSendersAuthorised(chain.dev.provider, registry, [
      NODE_KEY,
      STRANGER_KEY,
    ]).then(
      () => undefined,
      (error: Error) => error.message,
    )
    expect(refusal).toContain(
      `key 1 (${STRANGER}) not authorised by the Operator ${chain.dev.addresses.operator}`,
    )
    expect(refusal).toContain('datafeed game-odds (uint256)')
    expect(refusal).toMatch(/revert with "Not authorized sender".*setAuthorizedSenders/)
    expect(refusal).not.toContain(STRANGER_KEY.slice(2))
  })

  it('names a contractAddress with no Operator behind it, and the jobs that give it', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'feedrunner-jobs-'))
    const nowhere = Wallet.createRandom().address
    writeFileSync(
      join(dir, 'game-odds.toml'),
      readFileSync(join(projectJobs, 'game-odds.toml'), 'utf8').replace(
        /^contractAddress = .*$/m,
        `contractAddress = "${nowhere}"`,
      ),
    )
    const registry = await loadJobRegistry(dir, chain.dev.chainId)
    await expect(checkSendersAuthorised(chain.dev.provider, registry, [NODE_KEY])).rejects.toThrow(
      `no Operator contract answers at ${nowhere}: nothing is deployed there on this chain (the contractAddress of jobs: datafeed game-odds (uint256))`,
    )
  })

  it('`feedrunner runner` with such a key exits 1 and says why, without the key', async () => {
    const env = {
      ...process.env,
      RPC_URL: chain.anvil.rpcUrl,
      REDIS_URL: testRedisUrl(),
      QUEUE_PREFIX: uniquePrefix('unauthorised'),
      JOBS_DIR: projectJobs,
      NODE_PRIVATE_KEYS: `${NODE_KEY},${STRANGER_KEY}`,
      OPERATIONS_PORT: '0',
    }
    const run = promisify(execFile)(process.execPath, [join(root, 'bin/feedrunner.js'), 'runner'], {
      env,
      timeout: 30_000,
    })
    const failure = await run.then(
      () => undefined,
      (error: { code?: number; stdout: string; stderr: string }) => error,
    )
    expect(failure?.code).toBe(1)
    expect(failure?.stderr).toContain(
      `feedrunner runner could not start: sender key 1 (${STRANGER}) not authorised by the Operator`,
    )
    expect(`${failure?.stdout}${failure?.stderr}`).not.toContain(STRANGER_KEY.slice(2))
    expect(`${failure?.stdout}${failure?.stderr}`).not.toContain(NODE_KEY.slice(2))
  }, 40_000)
})
