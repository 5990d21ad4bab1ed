import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Writable } from 'node:stream'
import { pino } from 'pino'
import { afterEach, describe, expect, it } from 'vitest'
import { waitFor } from '../../src/dev/process.ts'
import { loadJobRegistry, type JobsChange } from '../../src/runner/job-registry.ts'
import { watchJobsDir, type JobsWatcher } from '../../src/runner/jobs-watch.ts'

const gameOdds = readFileSync(join(import.meta.dirname, '../../jobs/game-odds.toml'), 'utf8')
const OTHER_OPERATOR = '0x0165878A594ca255338adfa4d48449f69242Eb8F'

/** game-odds under another name and externalJobID (and, when asked, another Operator). */
function copyOfOdds(name: string, id: string, operator?: string): string {
  let text = gameOdds
    .replace(/^name = .*$/m, `name = "${name}"`)
    .replace(/^externalJobID = .*$/m, `externalJobID = "${id}"`)
  if (operator) text = text.replaceAll('0xe7f1725E7734CE288F8367e1Bb143E90bb3F0512', operator)
  return text
}

const dirs: string[] = []
function jobsDir(files: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), 'feedrunner-reload-'))
  dirs.push(dir)
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text)
  return dir
}
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true })
})

describe('the live job registry', () => {
  it('swaps a whole set at once and tells what was added, changed and removed', async () => {
    const dir = jobsDir({ 'odds.toml': gameOdds })
    const registry = await loadJobRegistry(dir, [31337])
    const [odds] = registry.jobs
    const changes: JobsChange[] = []
    registry.onChange((change) => changes.push(change))

    writeFileSync(
      join(dir, 'copy.toml'),
      copyOfOdds('copy', '3f1c7d2a-6b1e-4f0a-9c55-0a1b2c3d4e98'),
    )
    const added = registry.replace((await loadJobRegistry(dir, [31337])).jobs)
    expect(added.added.map((job) => job.name)).toEqual(['copy'])
    expect(added.changed).toEqual([])
    expect(registry.bySpecId(added.added[0]!.specIds[0]!)?.name).toBe('copy')

    writeFileSync(join(dir, 'odds.toml'), gameOdds.replace('timeout="20s"', 'timeout="19s"'))
    const changed = registry.replace((await loadJobRegistry(dir, [31337])).jobs)
    expect(changed.changed.map((job) => job.name)).toEqual([odds!.name])

    rmSync(join(dir, 'copy.toml'))
    const removed = registry.replace((await loadJobRegistry(dir, [31337])).jobs)
    expect(removed.removed.map((job) => job.name)).toEqual(['copy'])
    expect(registry.bySpecId(added.added[0]!.specIds[0]!)).toBeUndefined()

    // Loaded again unchanged: nobody is told.
    registry.replace((await loadJobRegistry(dir, [31337])).jobs)
    expect(changes).toHaveLength(3)
  })

  it("each chain's registry and the one operators() list follow a swap", async () => {
    const dir = jobsDir({ 'odds.toml': gameOdds })
    const registry = await loadJobRegistry(dir, [31337, 1])
    const chain = registry.forChain(31337)
    const operators = chain.operators()
    expect(operators).toEqual(['0xe7f1725E7734CE288F8367e1Bb143E90bb3F0512'])
    const told: JobsChange[] = []
    chain.onChange((change) => told.push(change))

    writeFileSync(
      join(dir, 'other.toml'),
      copyOfOdds('other', '3f1c7d2a-6b1e-4f0a-9c55-0a1b2c3d4e97', OTHER_OPERATOR),
    )
    registry.replace((await loadJobRegistry(dir, [31337, 1])).jobs)
    expect(told).toHaveLength(1)
    expect(chain.jobs.map((job) => job.name)).toContain('other')
    // The same array, refilled: whoever holds it (recovery, the reconciler) reads the new list.
    expect(chain.operators()).toBe(operators)
    expect(operators).toEqual(['0xe7f1725E7734CE288F8367e1Bb143E90bb3F0512', OTHER_OPERATOR])
    expect([...chain.specFilters().keys()]).toHaveLength(4)
    expect(registry.forChain(1).jobs).toEqual([])
  })
})

describe('JOBS_DIR watched', () => {
  let watcher: JobsWatcher | undefined
  afterEach(() => watcher?.close())

  function capturedLog(): { lines: Array<{ level: number; msg: string }>; log: pino.Logger } {
    const lines: Array<{ level: number; msg: string }> = []
    const log = pino(
      { level: 'info' },
      new Writable({
        write(chunk: Buffer, _encoding, done) {
          lines.push(JSON.parse(chunk.toString()) as { level: number; msg: string })
          done()
        },
      }),
    )
    return { lines, log }
  }

  it('loads a spec added, changed or removed, one line each; a broken one keeps the old set and says why', async () => {
    const dir = jobsDir({ 'odds.toml': gameOdds })
    const registry = await loadJobRegistry(dir, [31337])
    const { lines, log } = capturedLog()
    const refusals: Array<string | undefined> = []
    watcher = watchJobsDir({
      dir,
      log,
      reload: async () => registry.replace((await loadJobRegistry(dir, [31337])).jobs),
      onReload: (refused) => refusals.push(refused),
      settleMs: 50,
    })
    const seen = (pattern: RegExp) =>
      waitFor(`a log line ${pattern}`, async () => lines.some((line) => pattern.test(line.msg)))

    writeFileSync(
      join(dir, 'copy.toml'),
      copyOfOdds('copy', '3f1c7d2a-6b1e-4f0a-9c55-0a1b2c3d4e96'),
    )
    await seen(
      /^job added: copy \(externalJobID 3f1c7d2a-6b1e-4f0a-9c55-0a1b2c3d4e96, .*copy\.toml/,
    )
    expect(registry.jobs.map((job) => job.name)).toContain('copy')

    writeFileSync(join(dir, 'broken.toml'), 'type = "directrequest"\nname = "broken"\n')
    await seen(/^job specs not reloaded, the jobs loaded before still run: .*broken\.toml: /)
    const refusal = lines.find((line) => line.msg.startsWith('job specs not reloaded'))!
    expect(refusal.level).toBe(50)
    expect(refusal.msg).toContain('contractAddress is required')
    expect(registry.jobs).toHaveLength(2)
    expect(refusals.at(-1)).toContain('broken.toml')

    rmSync(join(dir, 'broken.toml'))
    await seen(/^job specs reloaded: every spec loads, no job changed$/)
    expect(refusals.at(-1)).toBeUndefined()

    writeFileSync(
      join(dir, 'copy.toml'),
      copyOfOdds('copy', '3f1c7d2a-6b1e-4f0a-9c55-0a1b2c3d4e96').replace(
        'timeout="20s"',
        'timeout="15s"',
      ),
    )
    await seen(/^job changed: copy /)

    rmSync(join(dir, 'copy.toml'))
    await seen(/^job removed: copy /)
    expect(registry.jobs.map((job) => job.name)).toEqual(['datafeed game-odds (uint256)'])
    // One line per change: nothing was told twice.
    expect(lines.filter((line) => line.msg.startsWith('job added: copy'))).toHaveLength(1)
  })

  it('leaves out a spec for a chain another runner serves, in one line; only a broken spec refuses the folder', async () => {
    const dir = jobsDir({ 'odds.toml': gameOdds })
    const registry = await loadJobRegistry(dir, [31337])
    const { lines, log } = capturedLog()
    const reloadDir = async () => {
      const next = await loadJobRegistry(dir, [31337])
      return registry.replace(next.jobs, next.notices)
    }
    watcher = watchJobsDir({ dir, log, reload: reloadDir })
    writeFileSync(
      join(dir, 'mainnet.toml'),
      copyOfOdds('odds on mainnet', '3f1c7d2a-6b1e-4f0a-9c55-0a1b2c3d4e95').replace(
        /^evmChainID = .*$/m,
        'evmChainID = "1"',
      ),
    )
    writeFileSync(
      join(dir, 'copy.toml'),
      copyOfOdds('copy', '3f1c7d2a-6b1e-4f0a-9c55-0a1b2c3d4e94'),
    )
    const first = await watcher.reload('SIGHUP')
    expect(first.ok).toBe(true)
    expect(registry.jobs.map((job) => job.name).sort()).toEqual([
      'copy',
      'datafeed game-odds (uint256)',
    ])
    const leftOut = lines.filter((line) => line.msg.includes('mainnet.toml'))
    expect(leftOut.map((line) => line.msg)).toEqual([
      `${join(dir, 'mainnet.toml')}: job "odds on mainnet" runs on chain 1, which this runner does not serve (configured chains: 31337): left out, for the runner that serves it (declare the chain in CHAINS_FILE for this one to)`,
    ])
    expect(leftOut[0]!.level).toBe(40)
    // Said once: a reload that finds it again is silent about it.
    expect((await watcher.reload('SIGHUP')).ok).toBe(true)
    expect(lines.filter((line) => line.msg.includes('mainnet.toml'))).toHaveLength(1)
    // A spec no runner could run still keeps the jobs loaded before.
    writeFileSync(join(dir, 'broken.toml'), 'type = "directrequest"\nname = "broken"\n')
    const refused = await watcher.reload('SIGHUP')
    expect(refused.ok).toBe(false)
    expect(refused.ok ? '' : refused.reason).toContain('broken.toml')
    expect(registry.jobs).toHaveLength(2)
  })

  it('reload() (what SIGHUP calls) answers even when nothing changed', async () => {
    const dir = jobsDir({ 'odds.toml': gameOdds })
    const registry = await loadJobRegistry(dir, [31337])
    const { lines, log } = capturedLog()
    watcher = watchJobsDir({
      dir,
      log,
      reload: async () => registry.replace((await loadJobRegistry(dir, [31337])).jobs),
    })
    const outcome = await watcher.reload('SIGHUP')
    expect(outcome.ok).toBe(true)
    expect(lines.map((line) => line.msg)).toEqual([
      'job specs reloaded: every spec loads, no job changed',
    ])
  })
})
