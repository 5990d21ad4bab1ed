import { copyFileSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createLogger } from '../../src/config/logger.ts'
import { parseSettings } from '../../src/config/settings.ts'
import { ANVIL_PRIVATE_KEYS, startAnvil, type Anvil } from '../../src/dev/anvil.ts'
import { startRunnerFromSettings } from '../../src/runner/start.ts'

const projectJobs = join(import.meta.dirname, '../../jobs')

/** What stops a runner's start before it connects anything: a chain's endpoint, a spec's chain. */
describe('starting a runner on CHAINS_FILE', () => {
  let anvil: Anvil
  const dir = mkdtempSync(join(tmpdir(), 'start-chains-'))

  beforeAll(async () => {
    anvil = await startAnvil()
  })
  afterAll(async () => {
    await anvil?.stop()
  })

  function start(chainsToml: string, jobsDir: string) {
    const file = join(dir, `chains-${Math.random().toString(36).slice(2)}.toml`)
    writeFileSync(file, chainsToml)
    const env = { CHAINS_FILE: file, JOBS_DIR: jobsDir, NODE_KEY: ANVIL_PRIVATE_KEYS[1] }
    const settings = parseSettings({ ...env, LOG_LEVEL: 'silent' })
    return startRunnerFromSettings(settings, createLogger(settings, 'start-chains-test'), { env })
  }

  it('stops when an endpoint serves another chain than the one declared, naming the endpoint', async () => {
    await expect(
      start(
        `[[chains]]\nchain_id = 5\nkeys_env = ["NODE_KEY"]\nendpoints = [{ url = "${anvil.rpcUrl}" }]\n`,
        projectJobs,
      ),
    ).rejects.toThrow(
      new RegExp(
        `endpoint 1 127\\.0\\.0\\.1:${new URL(anvil.rpcUrl).port} serves chain 31337, not chain 5: fix its url`,
      ),
    )
  })

  it('stops when a spec runs on a chain that is not configured, naming the spec and the configured chains', async () => {
    const jobsDir = mkdtempSync(join(tmpdir(), 'start-chains-jobs-'))
    copyFileSync(join(projectJobs, 'game-odds.toml'), join(jobsDir, 'game-odds.toml'))
    writeFileSync(
      join(jobsDir, 'odds-10.toml'),
      readFileSync(join(projectJobs, 'game-odds.toml'), 'utf8')
        .replace(/^name = ".*"$/m, 'name = "odds on 10"')
        .replace(
          /^externalJobID = ".*"$/m,
          'externalJobID = "3f1c7d2a-6b1e-4f0a-9c55-0a1b2c3d4e99"',
        )
        .replace(/^evmChainID = ".*"$/m, 'evmChainID = "10"'),
    )
    const error = await start(
      `[[chains]]\nchain_id = 31337\nkeys_env = ["NODE_KEY"]\nendpoints = [{ url = "${anvil.rpcUrl}" }]\n`,
      jobsDir,
    ).catch((caught: unknown) => caught as Error)
    expect((error as Error).message).toContain(
      `${join(jobsDir, 'odds-10.toml')}: job "odds on 10" runs on chain 10, which this runner does not serve (configured chains: 31337)`,
    )
  })
})
