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
import { runSeedList, runTestFiles, safeJson, type CheckResult } from './mutant-checks.ts'
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
    const baseline = await baselineOf(tree, options.mutants)
    for (const mutant of options.mutants) {
      if (tree.stopping) break
      console.log(`mutant ${mutant.name}: ${mutant.bug}`)
      const result = await checkMutant(tree, mutant, baseline)
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

/** What fails on HEAD itself, without a patch: a check that does is no verdict on a mutant. */
interface Baseline {
  failingTests: ReadonlySet<string>
  failingSeeds: ReadonlySet<number>
  /** The baseline of the tests or of the seeds could not be run: no check of that kind is judged. */
  testsUnknown: boolean
  seedsUnknown: boolean
}

/**
 * Runs every test file and seed the mutants name, once, on HEAD as committed: each must pass there,
 * or its failing on a mutant says nothing of the mutant.
 */
async function baselineOf(tree: MutantTree, mutants: readonly Mutant[]): Promise<Baseline> {
  tree.reset()
  const files = [...new Set(mutants.flatMap((mutant) => mutant.tests))].sort()
  const seeds = [...new Set(mutants.flatMap((mutant) => mutant.seeds))].sort((a, b) => a - b)
  console.log(`baseline: the checks they name, on HEAD without a patch`)
  const tests = files.length > 0 ? await runTestFiles(tree, files, LOGS_DIR, 'baseline') : undefined
  const schedules =
    seeds.length > 0 && !tree.stopping
      ? await runSeedList(tree, seeds, LOGS_DIR, 'baseline')
      : undefined
  for (const run of [tests, schedules]) {
    if (!run) continue
    const { check, outcome, lines, log, seconds } = run.result
    const said = { caught: 'FAILS on HEAD', missed: 'passes', error: 'could not be run' }[outcome]
    console.log(`  ${check}: ${said} (${seconds} s)`)
    if (outcome !== 'missed') {
      for (const line of lines.slice(0, 12)) console.log(`    ${line}`)
      console.log(`    (output: ${relative(process.cwd(), log)})`)
    }
  }
  return {
    failingTests: new Set(tests?.failed),
    failingSeeds: new Set(schedules?.failed),
    testsUnknown: tests?.result.outcome === 'error',
    seedsUnknown: schedules?.result.outcome === 'error',
  }
}

/** Applies one mutant to the tree (reset to HEAD first) and runs each check it names. */
async function checkMutant(
  tree: MutantTree,
  mutant: Mutant,
  baseline: Baseline,
): Promise<MutantResult> {
  const unfit = [
    ...(baseline.testsUnknown
      ? mutant.tests
      : mutant.tests.filter((t) => baseline.failingTests.has(t))),
    ...(baseline.seedsUnknown
      ? mutant.seeds
      : mutant.seeds.filter((s) => baseline.failingSeeds.has(s))
    ).map((seed) => `seed ${seed}`),
  ]
  const unjudged = (check: string, line: string, log: string): MutantResult => ({
    name: mutant.name,
    verdict: 'error',
    checks: [{ check, outcome: 'error', lines: line.split('\n'), log }],
  })
  if (unfit.length > 0)
    return unjudged(
      'baseline',
      `${unfit.join(', ')}: not passing on HEAD without the patch, so no verdict on it`,
      LOGS_DIR,
    )
  tree.reset()
  const refused = tree.apply(mutant.patch)
  if (refused !== undefined) return unjudged('git apply', refused, mutant.patch)
  const checks: CheckResult[] = []
  if (mutant.tests.length > 0)
    checks.push((await runTestFiles(tree, mutant.tests, LOGS_DIR, mutant.name)).result)
  if (mutant.seeds.length > 0 && !tree.stopping)
    checks.push((await runSeedList(tree, mutant.seeds, LOGS_DIR, mutant.name)).result)
  const verdict = checks.some((check) => check.outcome === 'error')
    ? 'error'
    : checks.every((check) => check.outcome === 'caught')
      ? 'caught'
      : 'survived'
  return { name: mutant.name, verdict, checks }
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
    error: 'a check could not be run, or does not pass on HEAD without the patch',
  }
  lines.push(`  ${mutant.name}: ${result.verdict} (${why[result.verdict]})`)
  return lines
}
