import { execFile, spawn } from 'node:child_process'
import { existsSync, readFileSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { describe, expect, it } from 'vitest'
import { waitFor } from '../../src/dev/process.ts'

// docs/performance.md shows `npm run bench -- --against <git-ref>`; this runs it small, against HEAD
// (its build is the same sources again, so the test needs no other commit): 10 requests, the one-key
// burst only, two pairs. Its figures are not judged (speed is measured, never asserted): only that
// both sides ran in both orders and fulfilled every request exactly once, as the bench read it from
// the chain, that the report prints each figure for both with their ratio, that the results JSON
// has its `against` key, and that the reference's worktree is gone afterwards, and on Ctrl-C too.
// In a clean checkout the reference's build is seeded with this one's dist/ and contracts (the same
// sources: tsc and solc would write the same files), so the first test spends no minutes in tsc; the
// Ctrl-C test turns that off (BENCH_AGAINST_REUSE_BUILD=0) so that it interrupts a real build.

const projectRoot = join(import.meta.dirname, '../..')
const REQUESTS = 10
const env = {
  ...process.env,
  BENCH_KEYS: '1',
  BENCH_PACED_SECONDS: '0',
  BENCH_BARE: '0',
  BENCH_AGAINST_PAIRS: '2',
}

interface Figure {
  figure: string
  this: number[]
  reference: number[]
  ratio: number
  ratioSpread: [number, number]
}

interface AgainstResults {
  against: {
    ref: string
    commit: string
    order: string[]
    figures: Record<string, Figure[]>
    targets: { target: string; met: boolean }[]
    phases: Array<Record<string, { this: PhaseResult; reference: PhaseResult } | number | string>>
  }
}

interface PhaseResult {
  requests: number
  fulfilled: number
  exactlyOnce: boolean
  label: string
}

async function worktrees(): Promise<string> {
  const { stdout } = await promisify(execFile)('git', ['worktree', 'list', '--porcelain'], {
    cwd: projectRoot,
  })
  return stdout
}

describe('npm run bench -- --against', () => {
  it('alternates the runner phases of both checkouts and reports each figure for both', async () => {
    const { stdout, stderr } = await promisify(execFile)(
      'npm',
      ['run', 'bench', '--', '--against', 'HEAD', String(REQUESTS)],
      // A hang bound only: building the reference takes up to a minute or two, the phases seconds.
      { cwd: projectRoot, env, timeout: 1_200_000, maxBuffer: 16 * 1024 * 1024 },
    )
    const file = /written to (\S+\.json)/.exec(stdout)?.[1]
    expect(file, stdout.slice(-2_000)).toBeDefined()
    const results = JSON.parse(readFileSync(file!, 'utf8')) as AgainstResults
    rmSync(file!)
    const worktree = /checking out \w+ in (\S+)/.exec(stderr)?.[1]
    expect(worktree, stderr.slice(-2_000)).toBeDefined()

    expect(results.against.ref).toBe('HEAD')
    expect(results.against.order).toEqual(['this', 'reference'])
    for (const pair of results.against.phases) {
      const phase = pair.k1 as { this: PhaseResult; reference: PhaseResult }
      for (const side of [phase.this, phase.reference]) {
        expect(side.fulfilled).toBe(REQUESTS)
        expect(side.exactlyOnce).toBe(true)
      }
      // The reference's runner is the reference's process, named for its commit.
      expect(phase.reference.label).toContain(`[${results.against.commit}]`)
      expect(phase.this.label).toContain('[this]')
    }
    const rate = results.against.figures.k1?.find((item) => item.figure === 'fulfilments a second')
    expect(rate?.this).toHaveLength(2)
    expect(rate?.reference).toHaveLength(2)
    for (const value of [...rate!.this, ...rate!.reference]) expect(value).toBeGreaterThan(0)
    expect(rate?.ratio).toBeGreaterThan(0)
    expect(rate!.ratioSpread[0]).toBeLessThanOrEqual(rate!.ratioSpread[1])
    expect(stdout).toMatch(
      new RegExp(`^fulfilments a second +[\\d.]+ +[\\d.]+ +[\\d.]+ x +[\\d.]+-[\\d.]+ *$`, 'm'),
    )
    expect(
      results.against.targets.find((target) => target.target.startsWith('exactly once'))?.met,
    ).toBe(true)
    expect(existsSync(worktree!)).toBe(false)
    expect(await worktrees()).not.toContain(worktree!)
  }, 1_260_000)

  it('removes the reference worktree when interrupted while building it', async () => {
    const bench = spawn(
      process.execPath,
      ['--import', 'tsx', 'bench/runner/main.ts', '--against', 'HEAD', String(REQUESTS)],
      {
        cwd: projectRoot,
        env: { ...env, BENCH_AGAINST_REUSE_BUILD: '0' },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    )
    let stderr = ''
    bench.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')))
    const exited = new Promise<number | null>((resolveExit) => bench.once('exit', resolveExit))
    // Interrupted while the reference builds (tsc and solc take a while longer than this wait).
    await waitFor(
      'the reference to be building',
      async () => /building the reference|npm ci/.test(stderr) || bench.exitCode !== null,
      120_000,
      50,
    )
    expect(bench.exitCode, stderr).toBeNull()
    const worktree = /checking out \w+ in (\S+)/.exec(stderr)?.[1]
    expect(worktree, stderr).toBeDefined()
    expect(existsSync(worktree!)).toBe(true)
    bench.kill('SIGINT')
    expect(await exited).toBe(130)
    expect(existsSync(worktree!)).toBe(false)
    expect(await worktrees()).not.toContain(worktree!)
  }, 180_000)
})
