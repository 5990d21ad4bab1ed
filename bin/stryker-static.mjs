// StrykerJS plugins for `npm run mutation -- --static-only` (bin/mutation-static.ts).
// - `list-only`, a checker that runs no mutant: every mutant reaching it is reported as not
//   compiling, so a run with `ignoreStatic` ends after the initial test run, having named the
//   static mutants (Ignored, `static: true`).
// - `listed-only`, an ignorer that keeps only the nodes holding one of those mutants (the JSON file
//   FEEDRUNNER_STATIC_MUTANTS names): a static mutant's range, a table's say, also holds the
//   functions in it, whose mutants a run without `--static-only` measures.
import { readFileSync } from 'node:fs'
import { relative, resolve } from 'node:path'
import { CheckStatus } from '@stryker-mutator/api/check'
import { PluginKind, declareClassPlugin, declareValuePlugin } from '@stryker-mutator/api/plugin'

class ListOnlyChecker {
  async init() {}

  /** @param {import('@stryker-mutator/api/core').Mutant[]} mutants */
  async check(mutants) {
    const listed = { status: CheckStatus.CompileError, reason: 'listed only, not run' }
    return Object.fromEntries(mutants.map((mutant) => [mutant.id, listed]))
  }
}

/** @typedef {{ line: number, column: number }} Position lines from 1, columns from 0 */
/** @typedef {{ start: Position, end: Position }} Range */

/** @type {Record<string, Range[]> | undefined} each file's static mutants, by path from the root */
let listed
function listedIn(file) {
  const from = process.env.FEEDRUNNER_STATIC_MUTANTS
  if (from === undefined) return undefined
  listed ??= JSON.parse(readFileSync(from, 'utf8'))
  return listed[relative(process.cwd(), resolve(file))] ?? []
}

const before = (a, b) => a.line < b.line || (a.line === b.line && a.column <= b.column)
const holds = (outer, inner) => before(outer.start, inner.start) && before(inner.end, outer.end)

/** @type {import('@stryker-mutator/api/ignore').Ignorer} */
export const listedOnly = {
  shouldIgnore(path) {
    const ranges = listedIn(path.hub?.file?.opts?.filename ?? '')
    const at = path.node.loc
    if (ranges === undefined || at == null) return undefined
    const node = { start: at.start, end: at.end }
    if (ranges.some((range) => holds(node, range))) return undefined
    return 'not static: measured by a run without --static-only'
  },
}

export const strykerPlugins = [
  declareClassPlugin(PluginKind.Checker, 'list-only', ListOnlyChecker),
  declareValuePlugin(PluginKind.Ignore, 'listed-only', listedOnly),
]
