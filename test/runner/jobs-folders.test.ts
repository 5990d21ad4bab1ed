import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { pino } from 'pino'
import { afterEach, describe, expect, it } from 'vitest'
import { jobsFolders } from '../../src/config/jobs-folders.ts'
import { waitFor } from '../../src/dev/process.ts'
import { JobsDirError, loadJobRegistry } from '../../src/runner/job-registry.ts'
import { watchJobsDir, type JobsWatcher } from '../../src/runner/jobs-watch.ts'

const gameOdds = readFileSync(join(import.meta.dirname, '../../jobs/game-odds.toml'), 'utf8')

function oddsNamed(name: string, id: string): string {
  return gameOdds
    .replace(/^name = .*$/m, `name = "${name}"`)
    .replace(/^externalJobID = .*$/m, `externalJobID = "${id}"`)
}

const roots: string[] = []
afterEach(() => {
  for (const root of roots.splice(0)) rmSync(root, { recursive: true, force: true })
})

/** A folder `first` with one spec and a folder `first/second` with another. */
function twoFolders(): { first: string; second: string } {
  const first = mkdtempSync(join(tmpdir(), 'feedrunner-folders-'))
  roots.push(first)
  const second = join(first, 'second')
  mkdirSync(second)
  writeFileSync(join(first, 'odds.toml'), gameOdds)
  writeFileSync(
    join(second, 'other.toml'),
    oddsNamed('other', '3f1c7d2a-6b1e-4f0a-9c55-0a1b2c3d4e91'),
  )
  return { first, second }
}

/** JOBS_DIR may name several folders (the dev stack runs `jobs,jobs/push`). */
describe('JOBS_DIR with several folders', () => {
  let watcher: JobsWatcher | undefined
  afterEach(() => watcher?.close())

  it('names each folder once, in order', () => {
    expect(jobsFolders('jobs')).toEqual(['jobs'])
    expect(jobsFolders(' jobs , jobs/push,,jobs/ ')).toEqual(['jobs', 'jobs/push'])
  })

  it("loads every folder's own specs, and a folder alone not its subfolders", async () => {
    const { first, second } = twoFolders()
    expect((await loadJobRegistry(first, [31337])).jobs.map((job) => job.name)).toEqual([
      'datafeed game-odds (uint256)',
    ])
    const both = await loadJobRegistry(`${first},${second}`, [31337])
    expect(both.jobs.map((job) => job.name).sort()).toEqual([
      'datafeed game-odds (uint256)',
      'other',
    ])
  })

  it('refuses one externalJobID in two folders, naming both files', async () => {
    const { first, second } = twoFolders()
    writeFileSync(join(second, 'again.toml'), gameOdds)
    const refused = await loadJobRegistry(`${first},${second}`, [31337]).catch(
      (error: unknown) => error,
    )
    expect(refused).toBeInstanceOf(JobsDirError)
    const message = (refused as JobsDirError).message
    expect(message).toContain(join(first, 'odds.toml'))
    expect(message).toContain(join(second, 'again.toml'))
  })

  it('reloads when a spec of the second folder changes', async () => {
    const { first, second } = twoFolders()
    const dir = `${first},${second}`
    const registry = await loadJobRegistry(dir, [31337])
    watcher = watchJobsDir({
      dir,
      log: pino({ level: 'silent' }),
      reload: async () => registry.replace((await loadJobRegistry(dir, [31337])).jobs),
      settleMs: 50,
    })
    writeFileSync(
      join(second, 'third.toml'),
      oddsNamed('third', '3f1c7d2a-6b1e-4f0a-9c55-0a1b2c3d4e92'),
    )
    await waitFor('the spec added to the second folder loaded', async () =>
      registry.jobs.some((job) => job.name === 'third'),
    )
    rmSync(join(second, 'other.toml'))
    await waitFor('the spec removed from the second folder gone', async () =>
      registry.jobs.every((job) => job.name !== 'other'),
    )
    expect(registry.jobs).toHaveLength(2)
  })
})
