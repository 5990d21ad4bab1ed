import { readFileSync, writeFileSync } from 'node:fs'
import { join, relative } from 'node:path'
import { z } from 'zod'
import type { MutantTree } from './mutant-tree.ts'

/** One check's verdict: it failed (caught), passed (missed), or could not run (error). */
export interface CheckResult {
  check: string
  outcome: 'caught' | 'missed' | 'error'
  /** What failed (tests, violations), or why the check could not run. */
  lines: string[]
  log: string
  /** How long it ran, in seconds. */
  seconds?: number
}

/** A check's result with what in it failed: the test files, or the seeds. */
export interface CheckRun<T> {
  result: CheckResult
  failed: T[]
}

const vitestReportSchema = z.object({
  numFailedTests: z.number(),
  numFailedTestSuites: z.number(),
  testResults: z.array(
    z.object({
      name: z.string(),
      status: z.string(),
      message: z.string().optional(),
      assertionResults: z.array(
        z.object({
          fullName: z.string(),
          status: z.string(),
          failureMessages: z.array(z.string()).nullish(),
        }),
      ),
    }),
  ),
})

/**
 * Test files through vitest in the tree, its output to `<logs>/<label>.tests.log`: caught when any
 * test (or a file's setup) failed, each failure a line.
 */
export async function runTestFiles(
  tree: MutantTree,
  files: readonly string[],
  logs: string,
  label: string,
): Promise<CheckRun<string>> {
  const reportFile = join(logs, `${label}.tests.json`)
  writeFileSync(reportFile, '')
  const vitest = join(tree.root, 'node_modules', 'vitest', 'vitest.mjs')
  const exit = await timed(() =>
    tree.run(
      [
        vitest,
        'run',
        ...files,
        '--reporter=default',
        '--reporter=json',
        `--outputFile.json=${reportFile}`,
      ],
      join(logs, `${label}.tests.log`),
    ),
  )
  const check = `vitest ${files.join(' ')}`
  const parsed = vitestReportSchema.safeParse(safeJson(readFileSync(reportFile, 'utf8')))
  if (!parsed.success) {
    const lines = [`vitest wrote no report (exit ${exit.code})`]
    return { result: { check, outcome: 'error', lines, ...exit.about }, failed: [] }
  }
  // A file the tree lacks (written, not committed: the tree is HEAD) or whose tests all skipped
  // proves nothing either way: no verdict, not a miss.
  const idle = files.filter((file) => {
    const suite = parsed.data.testResults.find((run) => relative(tree.path, run.name) === file)
    return !suite?.assertionResults.some((test) => ['passed', 'failed'].includes(test.status))
  })
  if (idle.length > 0) {
    const lines = idle.map((file) => `${file}: ran no test in the tree (is it committed?)`)
    return { result: { check, outcome: 'error', lines, ...exit.about }, failed: [] }
  }
  const lines: string[] = []
  const failed: string[] = []
  for (const suite of parsed.data.testResults) {
    const where = relative(tree.path, suite.name)
    const tests = suite.assertionResults.filter((test) => test.status === 'failed')
    if (suite.status === 'failed') failed.push(where)
    if (suite.status === 'failed' && tests.length === 0)
      lines.push(`${where}: ${firstLine(suite.message)}`)
    for (const test of tests)
      lines.push(`${where} > ${test.fullName}: ${firstLine(test.failureMessages?.[0])}`)
  }
  const outcome = failed.length > 0 ? 'caught' : 'missed'
  return { result: { check, outcome, lines, ...exit.about }, failed }
}

/**
 * Seeds through the fault search as it is in the tree, its output to `<logs>/<label>.seeds.log`:
 * caught when one broke an invariant. A schedule the harness could not run to its end (a loaded
 * machine, a stack that would not start) is no verdict: it is an error unless another broke one.
 */
export async function runSeedList(
  tree: MutantTree,
  seeds: readonly number[],
  logs: string,
  label: string,
): Promise<CheckRun<number>> {
  const reportFile = join(logs, `${label}.seeds.json`)
  writeFileSync(reportFile, '')
  // The stack's processes start from dist/ when it is built from src/ as it is (bin/feedrunner.js):
  // quicker than through tsx, which on a loaded machine can take a process past its start bound.
  // A build that fails leaves them on tsx.
  const exit = await timed(async () => {
    await tree.run(['bin/build.js'], join(logs, `${label}.build.log`))
    return tree.run(
      ['--import', 'tsx', 'chaos/main.ts', '--seed', seeds.join(','), '--report', reportFile],
      join(logs, `${label}.seeds.log`),
    )
  })
  const check = `chaos --seed ${seeds.join(',')}`
  const counts = z
    .object({
      schedules: z.number(),
      violations: z.number(),
      seedsWithViolations: z.array(z.number()),
    })
    .safeParse(safeJson(readFileSync(reportFile, 'utf8')))
  if (!counts.success || counts.data.schedules < seeds.length) {
    const lines = [`the fault search wrote no report (exit ${exit.code})`]
    return { result: { check, outcome: 'error', lines, ...exit.about }, failed: [] }
  }
  const lines = readFileSync(exit.about.log, 'utf8')
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => /^(schedule \d+:|sent:|VIOLATION|HARNESS ERROR)/.test(line))
    .map((line) => line.slice(0, 300))
  lines.push(`${counts.data.schedules} schedules, ${counts.data.violations} violations`)
  const broken = lines.some((line) => line.startsWith('VIOLATION'))
  const harness = lines.some((line) => line.startsWith('HARNESS ERROR'))
  const outcome = broken ? 'caught' : harness ? 'error' : 'missed'
  return {
    result: { check, outcome, lines, ...exit.about },
    failed: counts.data.seedsWithViolations,
  }
}

/** Runs a check's processes and says how long they took. */
async function timed(
  run: () => Promise<{ code: number | null; log: string }>,
): Promise<{ code: number | null; about: { log: string; seconds: number } }> {
  const began = Date.now()
  const { code, log } = await run()
  return { code, about: { log, seconds: Math.round((Date.now() - began) / 1000) } }
}

function firstLine(text: string | undefined): string {
  return (text ?? '').split('\n')[0]!.slice(0, 300)
}

export function safeJson(text: string): unknown {
  try {
    return JSON.parse(text)
  } catch {
    return undefined
  }
}
