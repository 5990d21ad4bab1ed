/**
 * Planted bugs (`npm run chaos -- --mutants`): each patch in chaos/mutants/ is a one-place bug in
 * src/ beside a manifest naming what it breaks and which checks must catch it (test files, fault-search
 * seeds, or both). Each is applied in turn to a temporary git worktree of HEAD, its checks run there,
 * and it is `caught` when every check it names failed on it. docs/reliability.md, "Planted bugs".
 *
 *   npm run chaos -- --mutants                    every mutant
 *   npm run chaos -- --mutants name1,name2        those
 *   npm run chaos -- --mutants --report F.json    also the counts to F.json (CI's closing line reads them)
 *
 * The last line reads `mutants: K of N caught`; exits non-zero unless every one was.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import { z } from 'zod'
import { MutantTree } from './mutant-tree.ts'

const projectRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..')
const MUTANTS_DIR = join(projectRoot, 'chaos', 'mutants')
/** Each check's whole output, kept after the worktree is gone (an ignored folder). */
const LOGS_DIR = join(projectRoot, '.cache', 'mutants')

const manifestSchema = z
  .object({
    /** The bug, as the patch plants it. */
    bug: z.string().min(1),
    /** The invariant it breaks, and who relies on it. */
    breaks: z.string().min(1),
    /** Test files (from the project's root) that must fail on it. */
    tests: z.array(z.string().regex(/^test\/.+\.test\.ts$/)).default([]),
    /** Fault-search seeds that must find a violation on it. */
    seeds: z.array(z.number().int().min(0).max(0xffffffff)).default([]),
  })
  .strict()
  .refine((manifest) => manifest.tests.length + manifest.seeds.length > 0, {
    message: 'names no check (tests or seeds)',
  })

export interface Mutant extends z.infer<typeof manifestSchema> {
  name: string
  patch: string
}

/** One check's verdict on a mutant: it failed (caught), passed (missed), or could not run (error). */
interface CheckResult {
  check: string
  outcome: 'caught' | 'missed' | 'error'
  /** What failed (tests, violations), or why the check could not run. */
  lines: string[]
  log: string
  /** How long it ran, in seconds. */
  seconds?: number
}

interface MutantResult {
  name: string
  verdict: 'caught' | 'survived' | 'error'
  checks: CheckResult[]
}

/** Every mutant in chaos/mutants/: a `<name>.json` manifest beside its `<name>.patch`. */
export function loadMutants(dir = MUTANTS_DIR): Mutant[] {
  const names = readdirSync(dir)
    .filter((file) => file.endsWith('.json'))
    .map((file) => file.slice(0, -'.json'.length))
    .sort()
  const patches = new Set(readdirSync(dir).filter((file) => file.endsWith('.patch')))
  return names.map((name) => {
    const where = `chaos/mutants/${name}`
    const json = safeJson(readFileSync(join(dir, `${name}.json`), 'utf8'))
    if (json === undefined) throw new Error(`${where}.json: not JSON`)
    const parsed = manifestSchema.safeParse(json)
    if (!parsed.success)
      throw new Error(`${where}.json: ${parsed.error.issues[0]?.message ?? 'invalid'}`)
    const missing = parsed.data.tests.filter((test) => !existsSync(join(projectRoot, test)))
    if (missing.length > 0)
      throw new Error(`${where}.json names ${missing.join(', ')}: no such file`)
    if (!patches.has(`${name}.patch`))
      throw new Error(`${where}.json has no ${name}.patch beside it`)
    const patch = join(dir, `${name}.patch`)
    // A planted bug is in src/ only: a patch of the tests or the harness would weaken the checks.
    const touched = [...readFileSync(patch, 'utf8').matchAll(/^\+\+\+ (?:b\/)?(\S+)/gm)].map(
      (m) => m[1],
    )
    if (touched.length === 0 || touched.some((file) => !file?.startsWith('src/')))
      throw new Error(
        `${where}.patch: a planted bug changes files under src/ only (${touched.join(', ') || 'none'})`,
      )
    return { name, patch, ...parsed.data }
  })
}

/** Whether the command line asks for the planted bugs rather than schedules. */
export function mutantsAsked(argv: readonly string[]): boolean {
  return argv.includes('--mutants')
}

function optionsOf(argv: readonly string[], all: readonly Mutant[]) {
  const { values, positionals } = parseArgs({
    args: [...argv],
    options: { mutants: { type: 'boolean' }, report: { type: 'string' } },
    allowPositionals: true,
    strict: true,
  })
  const asked = positionals.flatMap((list) => list.split(',')).map((name) => name.trim())
  const unknown = asked.filter((name) => !all.some((mutant) => mutant.name === name))
  if (unknown.length > 0)
    throw new Error(
      `--mutants ${unknown.join(',')}: no such mutant in chaos/mutants/ (there are: ${all.map((m) => m.name).join(', ')})`,
    )
  const mutants = asked.length === 0 ? all : all.filter((mutant) => asked.includes(mutant.name))
  return { mutants, report: values.report }
}

/** Runs the mutants the command line names on a worktree of HEAD; the process's exit code. */
export async function runMutants(argv: readonly string[]): Promise<number> {
  let options: ReturnType<typeof optionsOf>
  try {
    options = optionsOf(argv, loadMutants())
  } catch (error) {
    console.error(`chaos: ${(error as Error).message}`)
    return 2
  }
  mkdirSync(LOGS_DIR, { recursive: true })
  let tree: MutantTree
  try {
    tree = MutantTree.create(projectRoot)
  } catch (error) {
    const words = String((error as { stderr?: unknown }).stderr ?? (error as Error).message)
    console.error(
      `chaos: could not make a git worktree of HEAD for the planted bugs (${words.trim()}); --mutants needs a git checkout with git on PATH`,
    )
    return 2
  }
  // Interrupted: the check under way is stopped (its processes with it), the loop ends, and the
  // worktree goes in `finally`; a second signal ends the process, and the tree goes on exit.
  const interrupt = (signal: NodeJS.Signals) => void tree.stop(signal)
  process.once('SIGINT', interrupt)
  process.once('SIGTERM', interrupt)
  process.once('exit', () => tree.remove())
  const results: MutantResult[] = []
  try {
    for (const mutant of options.mutants) {
      console.log(`mutant ${mutant.name}: ${mutant.bug}`)
      const result = await checkMutant(tree, mutant)
      if (tree.stopping) break
      for (const line of describeMutant(mutant, result)) console.log(line)
      results.push(result)
    }
  } finally {
    tree.remove()
  }
  if (tree.stopping) {
    console.log(`chaos: interrupted; the check under way is stopped and ${tree.path} removed`)
    return 130
  }
  const caught = results.filter((result) => result.verdict === 'caught')
  const missed = results.filter((result) => result.verdict !== 'caught').map((r) => r.name)
  if (options.report)
    writeFileSync(
      options.report,
      `${JSON.stringify({ mutants: results.length, caught: caught.length, notCaught: missed }, null, 2)}\n`,
    )
  console.log(
    `mutants: ${caught.length} of ${results.length} caught${missed.length ? ` (not caught: ${missed.join(', ')})` : ''}`,
  )
  return missed.length > 0 ? 1 : 0
}

/** Applies one mutant to the tree (reset to HEAD first) and runs each check it names. */
async function checkMutant(tree: MutantTree, mutant: Mutant): Promise<MutantResult> {
  tree.reset()
  const refused = tree.apply(mutant.patch)
  if (refused !== undefined)
    return {
      name: mutant.name,
      verdict: 'error',
      checks: [{ check: 'git apply', outcome: 'error', lines: [refused], log: mutant.patch }],
    }
  const checks: CheckResult[] = []
  const timed = async (check: Promise<CheckResult>) => {
    const began = Date.now()
    return { ...(await check), seconds: Math.round((Date.now() - began) / 1000) }
  }
  if (mutant.tests.length > 0) checks.push(await timed(runTests(tree, mutant)))
  if (mutant.seeds.length > 0) checks.push(await timed(runSeeds(tree, mutant)))
  const verdict = checks.some((check) => check.outcome === 'error')
    ? 'error'
    : checks.every((check) => check.outcome === 'caught')
      ? 'caught'
      : 'survived'
  return { name: mutant.name, verdict, checks }
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

/** The mutant's test files through vitest: caught when any test (or a file's setup) failed. */
async function runTests(tree: MutantTree, mutant: Mutant): Promise<CheckResult> {
  const reportFile = join(LOGS_DIR, `${mutant.name}.tests.json`)
  writeFileSync(reportFile, '')
  const vitest = join(projectRoot, 'node_modules', 'vitest', 'vitest.mjs')
  const exit = await tree.run(
    [
      vitest,
      'run',
      ...mutant.tests,
      '--reporter=default',
      '--reporter=json',
      `--outputFile.json=${reportFile}`,
    ],
    join(LOGS_DIR, `${mutant.name}.tests.log`),
  )
  const check = `vitest ${mutant.tests.join(' ')}`
  let report: z.infer<typeof vitestReportSchema>
  try {
    report = vitestReportSchema.parse(JSON.parse(readFileSync(reportFile, 'utf8')))
  } catch {
    return {
      check,
      outcome: 'error',
      lines: [`vitest wrote no report (exit ${exit.code})`],
      log: exit.log,
    }
  }
  const lines: string[] = []
  for (const suite of report.testResults) {
    const where = relative(tree.path, suite.name)
    const failed = suite.assertionResults.filter((test) => test.status === 'failed')
    if (suite.status === 'failed' && failed.length === 0)
      lines.push(`${where}: ${firstLine(suite.message)}`)
    for (const test of failed)
      lines.push(`${where} > ${test.fullName}: ${firstLine(test.failureMessages?.[0])}`)
  }
  const caught = report.numFailedTests > 0 || report.numFailedTestSuites > 0
  return { check, outcome: caught ? 'caught' : 'missed', lines, log: exit.log }
}

/** The mutant's seeds through the fault search as it is at HEAD: caught when any broke an invariant. */
async function runSeeds(tree: MutantTree, mutant: Mutant): Promise<CheckResult> {
  const reportFile = join(LOGS_DIR, `${mutant.name}.seeds.json`)
  writeFileSync(reportFile, '')
  // The stack's processes start from dist/ when it is built from src/ as it is (bin/feedrunner.js):
  // quicker than through tsx, which on a loaded machine can take a process past its start bound.
  // A build that fails leaves them on tsx.
  await tree.run(['bin/build.js'], join(LOGS_DIR, `${mutant.name}.build.log`))
  const exit = await tree.run(
    ['--import', 'tsx', 'chaos/main.ts', '--seed', mutant.seeds.join(','), '--report', reportFile],
    join(LOGS_DIR, `${mutant.name}.seeds.log`),
  )
  const check = `chaos --seed ${mutant.seeds.join(',')}`
  const counts = z
    .object({ schedules: z.number(), violations: z.number() })
    .safeParse(safeJson(readFileSync(reportFile, 'utf8')))
  if (!counts.success || counts.data.schedules < mutant.seeds.length)
    return {
      check,
      outcome: 'error',
      lines: [`the fault search wrote no report (exit ${exit.code})`],
      log: exit.log,
    }
  const lines = readFileSync(exit.log, 'utf8')
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => /^(schedule \d+:|sent:|VIOLATION|HARNESS ERROR)/.test(line))
    .map((line) => line.slice(0, 300))
  lines.push(`${counts.data.schedules} schedules, ${counts.data.violations} violations`)
  // A schedule the harness could not run to its end (a loaded machine, a stack that would not
  // start) is no verdict on the mutant: only a broken invariant catches it.
  const broken = lines.some((line) => line.startsWith('VIOLATION'))
  const harness = lines.some((line) => line.startsWith('HARNESS ERROR'))
  const outcome = broken ? 'caught' : harness ? 'error' : 'missed'
  return { check, outcome, lines, log: exit.log }
}

/** A mutant's lines: each check with what failed, then the verdict. */
function describeMutant(mutant: Mutant, result: MutantResult): string[] {
  const lines = [`  breaks: ${mutant.breaks}`]
  for (const check of result.checks) {
    lines.push(
      `  ${check.check}: ${check.outcome}${check.seconds === undefined ? '' : ` (${check.seconds} s)`}`,
    )
    for (const line of check.lines.slice(0, 12)) lines.push(`    ${line}`)
    if (check.outcome !== 'caught')
      lines.push(`    (output: ${relative(process.cwd(), check.log)})`)
  }
  const why = {
    caught: 'every check it names failed on it',
    survived: 'a check it names passed on it',
    error: 'a check could not be run',
  }
  lines.push(`  ${mutant.name}: ${result.verdict} (${why[result.verdict]})`)
  return lines
}

function firstLine(text: string | undefined): string {
  return (text ?? '').split('\n')[0]!.slice(0, 300)
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text)
  } catch {
    return undefined
  }
}
