// `npm run mutation -- --static-only`: the static mutants of a folder, which `--ignore-static` leaves
// out. A static mutant is in code that runs only as a module loads (a schema, a table, a builder a
// table calls): no test covers it on its own, so StrykerJS runs it against every test of the folder
// on freshly loaded modules. They are found first (a run that ignores them and runs nothing else),
// then measured alone: `mutate` names each one's range and an ignorer leaves out the other mutants
// inside it (bin/stryker-static.mjs has both plugins). Only the mutants found count in the score.
import { mkdirSync, writeFileSync } from 'node:fs'
import { join, relative } from 'node:path'
import type { MutantResult } from '@stryker-mutator/api/core'
import type { PartialStrykerOptions } from '@stryker-mutator/api/core'
import { Stryker } from '@stryker-mutator/core'

const root = join(import.meta.dirname, '..')
const PLUGINS = ['@stryker-mutator/vitest-runner', join(root, 'bin/stryker-static.mjs')]

/** The static mutants of `mutate`, found by the initial test run's coverage, none of them run. */
export async function listStatic(
  base: PartialStrykerOptions,
  mutate: string[],
): Promise<MutantResult[]> {
  const results = await new Stryker({
    ...base,
    mutate,
    ignoreStatic: true,
    plugins: PLUGINS,
    checkers: ['list-only'],
    reporters: ['clear-text'],
    clearTextReporter: { reportMutants: false, reportTests: false, reportScoreTable: false },
  }).runMutationTest()
  return results.filter((result) => result.static === true && result.status === 'Ignored')
}

/**
 * The options that measure the `listed` mutants alone: each one's range as `mutate` takes it
 * (`file:line:column-line:column`, columns from 0, the last included; the report counts them from
 * 1), and the ignorer that keeps only the nodes holding one, which reads them from `listFile`.
 */
export function measureListed(listed: MutantResult[], listFile: string): PartialStrykerOptions {
  const ranges: Record<string, { start: Position; end: Position }[]> = {}
  const mutate = listed.map(({ fileName, location }) => {
    const file = relative(root, fileName)
    const start = { line: location.start.line, column: location.start.column - 1 }
    const end = { line: location.end.line, column: location.end.column - 1 }
    ;(ranges[file] ??= []).push({ start, end })
    return `${file}:${start.line}:${start.column}-${end.line}:${end.column}`
  })
  mkdirSync(join(listFile, '..'), { recursive: true })
  writeFileSync(listFile, JSON.stringify(ranges))
  process.env.FEEDRUNNER_STATIC_MUTANTS = listFile
  return { mutate, plugins: PLUGINS, ignorers: ['listed-only'] }
}

interface Position {
  line: number
  column: number
}

/** One mutant, the same in the listing run and the measuring one (their ids differ). */
function identity(mutant: MutantResult): string {
  const { start, end } = mutant.location
  const at = `${start.line}:${start.column}-${end.line}:${end.column}`
  return `${mutant.fileName}@${at} ${mutant.mutatorName} ${mutant.replacement}`
}

/** The results of the mutants listed as static; the rest of a range's mutants run but do not count. */
export function onlyListed(results: MutantResult[], listed: MutantResult[]): MutantResult[] {
  const wanted = new Set(listed.map(identity))
  return results.filter((result) => wanted.has(identity(result)))
}
