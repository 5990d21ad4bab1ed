import { copyFileSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createLogger } from '../../src/config/logger.ts'
import { parseSettings } from '../../src/config/settings.ts'
import { ANVIL_PRIVATE_KEYS, startAnvil, type Anvil } from '../../src/dev/anvil.ts'
import { startRunnerFromSettings } from '../../src/runner/start.ts'
import { testRedisUrl, uniquePrefix } from '../support/redis.ts'

const projectJobs = join(import.meta.dirname, '../../jobs')

/** What a runner's start does with a chain's endpoint and a spec's chain before it connects anything. */
describe('starting a runner on CHAINS_FILE', () => {
  let anvil: Anvil
  const dir = mkdtempSync(join(tmpdir(), 'start-chains-'))

  beforeAll(async () => {
    anvil = await startAnvil()
  })
  afterAll(async () => {
    await anvil?.stop()
  })

  function start(chainsToml: string, jobsDir: string, lines?: string[]) {
    const file = join(dir, `chains-${Math.random().toString(36).slice(2)}.toml`)
    writeFileSync(file, chainsToml)
    const env = {
      CHAINS_FILE: file,
      JOBS_DIR: jobsDir,
      NODE_KEY: ANVIL_PRIVATE_KEYS[1],
      REDIS_URL: testRedisUrl(),
      QUEUE_PREFIX: uniquePrefix('start-chains'),
    }
    const settings = parseSettings({
      ...env,
      LOG_LEVEL: lines ? 'warn' : 'silent',
      LOG_FORMAT: 'json',
    })
    const logger = createLogger(settings, 'start-chains-test', {
      write: (line: string) => void lines?.push(line),
    })
    return startRunnerFromSettings(settings, logger, { env })
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

  it('leaves out a spec for a chain that is not configured, in one line naming the spec and the configured chains', async () => {
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
    const lines: string[] = []
    // This anvil has no Operator: the start goes on past the specs and stops at the sender's check.
    const outcome = await start(
      `[[chains]]\nchain_id = 31337\nkeys_env = ["NODE_KEY"]\nendpoints = [{ url = "${anvil.rpcUrl}" }]\n`,
      jobsDir,
      lines,
    ).catch((caught: unknown) => caught as Error)
    if (!(outcome instanceof Error)) await outcome.stop()
    expect(lines.join('\n')).toContain(
      `${join(jobsDir, 'odds-10.toml')}: job \\"odds on 10\\" runs on chain 10, which this runner does not serve (configured chains: 31337): left out`,
    )
    expect(String(outcome)).not.toContain('odds-10.toml')
  })
})
