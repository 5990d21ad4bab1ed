import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { chooseChain } from '../../src/runner/chain-choice.ts'
import { JobsDirError, loadJobRegistry } from '../../src/runner/job-registry.ts'

const gameOdds = readFileSync(join(import.meta.dirname, '../../jobs/game-odds.toml'), 'utf8')
const withoutChain = gameOdds.replace(/^evmChainID = .*\n/m, '')

function jobsDir(files: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), 'feedrunner-registry-'))
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text)
  return dir
}

describe('evmChainID: which chain a spec runs on', () => {
  const spec = { name: 'odds' }

  it('a spec that names its chain runs there, and only there', () => {
    expect(chooseChain({ ...spec, evmChainID: 31337n }, [31337])).toEqual({
      kind: 'serve',
      chainId: 31337,
    })
    expect(chooseChain({ ...spec, evmChainID: 1n }, [31337])).toEqual({ kind: 'other-chain' })
    expect(chooseChain({ ...spec, evmChainID: 137n }, [1, 137])).toEqual({
      kind: 'serve',
      chainId: 137,
    })
  })

  it('without evmChainID: the only chain, with a notice naming the job and the chain', () => {
    expect(chooseChain(spec, [31337])).toEqual({
      kind: 'serve',
      chainId: 31337,
      notice:
        'job "odds" has no evmChainID: it runs on chain 31337, the one chain this runner serves',
    })
  })

  it('without evmChainID and several chains: refused, naming evmChainID and the chain ids', () => {
    expect(chooseChain(spec, [1, 137])).toEqual({
      kind: 'refuse',
      message:
        'evmChainID is required when the runner serves several chains (configured chain ids: 1, 137): add evmChainID = "<one of them>" to say which chain\'s Operator this job answers',
    })
  })
})

describe('loadJobRegistry', () => {
  it('puts a spec without evmChainID on the one chain, says so once, and gives $(jobSpec.evmChainID) that chain', async () => {
    const dir = jobsDir({ 'odds.toml': withoutChain })
    const registry = await loadJobRegistry(dir, [31337])
    expect(registry.jobs).toHaveLength(1)
    expect(registry.jobs[0]!.job.spec.evmChainID).toBe(31337n)
    expect(registry.notices).toEqual([
      `${join(dir, 'odds.toml')}: job "datafeed game-odds (uint256)" has no evmChainID: it runs on chain 31337, the one chain this runner serves`,
    ])
  })

  it('refuses a spec without evmChainID when several chains are configured', async () => {
    const dir = jobsDir({ 'odds.toml': withoutChain })
    const error = await loadJobRegistry(dir, [1, 137]).catch((caught: unknown) => caught)
    expect(error).toBeInstanceOf(JobsDirError)
    expect((error as Error).message).toContain(
      `${join(dir, 'odds.toml')}: evmChainID is required when the runner serves several chains (configured chain ids: 1, 137)`,
    )
  })

  it('leaves out a spec for a chain this runner does not serve, with one line naming it and the configured chains', async () => {
    const dir = jobsDir({ 'odds.toml': gameOdds })
    const elsewhere = await loadJobRegistry(dir, [1, 137])
    expect(elsewhere.jobs).toEqual([])
    expect(elsewhere.notices).toEqual([
      `${join(dir, 'odds.toml')}: job "datafeed game-odds (uint256)" runs on chain 31337, which this runner does not serve (configured chains: 1, 137): left out, for the runner that serves it (declare the chain in CHAINS_FILE for this one to)`,
    ])
    // Each chain's runner gets its chain's jobs.
    const registry = await loadJobRegistry(dir, [31337, 1])
    expect(registry.forChain(31337).jobs).toHaveLength(1)
    expect(registry.forChain(1).jobs).toHaveLength(0)
    expect(registry.notices).toEqual([])
  })

  it('refuses two specs with one externalJobID, naming both files', async () => {
    const dir = jobsDir({
      'a.toml': gameOdds,
      'b.toml': gameOdds.replace(/^name = .*$/m, 'name = "copy"'),
    })
    const error = await loadJobRegistry(dir, [31337]).catch((caught: unknown) => caught)
    expect(error).toBeInstanceOf(JobsDirError)
    expect((error as Error).message).toMatch(
      new RegExp(
        `${join(dir, 'b.toml')}: externalJobID [0-9a-f-]{36} is also the id of ${join(dir, 'a.toml')}`,
      ),
    )
  })

  it('two specs without externalJobID in one folder get two different ids', async () => {
    const noId = gameOdds.replace(/^externalJobID = .*\n/m, '')
    const dir = jobsDir({ 'a.toml': noId, 'b.toml': noId })
    const registry = await loadJobRegistry(dir, [31337])
    const ids = registry.jobs.map((job) => job.externalJobId)
    expect(new Set(ids).size).toBe(2)
  })
})
