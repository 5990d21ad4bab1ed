// Mutation score of the pure modules: one StrykerJS run per folder (stryker.config.mjs), then the
// score of each. `npm run mutation` runs every folder; `npm run mutation -- net reduce` only those;
// `--concurrency N` runs N mutants at once (one by default: the machine is shared with other work);
// `--ignore-static` leaves out the mutants of code that runs as a module loads (StrykerJS's ignoreStatic);
// `--static-only` measures those alone (bin/mutation-static.ts): the two runs together measure every one;
// `--files a.ts,b.ts` mutates only those files, with the folder's tests.
// Reports (HTML, JSON, the survivors as text) go to reports/mutation/<folder>/, which git ignores.
import { mkdirSync, writeFileSync } from 'node:fs'
import { dirname, join, relative } from 'node:path'
import { parseArgs } from 'node:util'
import { fileURLToPath } from 'node:url'
import { Stryker } from '@stryker-mutator/core'
import type { MutantResult, PartialStrykerOptions } from '@stryker-mutator/api/core'
import { listStatic, measureListed, onlyListed } from './mutation-static.ts'
import { mutationFolders } from '../stryker.config.mjs'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const folders = mutationFolders
const { values: options, positionals: wanted } = parseArgs({
  args: process.argv.slice(2).filter((arg) => arg !== '--'),
  allowPositionals: true,
  options: {
    concurrency: { type: 'string' },
    'ignore-static': { type: 'boolean' },
    'static-only': { type: 'boolean' },
    files: { type: 'string' },
  },
})
const concurrency = options.concurrency === undefined ? undefined : Number(options.concurrency)
if (concurrency !== undefined && !(Number.isInteger(concurrency) && concurrency >= 1)) {
  console.error(
    `--concurrency takes a whole number of mutants at once (1 or more), not ${options.concurrency}`,
  )
  process.exit(2)
}
if (options['ignore-static'] && options['static-only']) {
  console.error('--ignore-static and --static-only each measure one part of a folder: give one')
  process.exit(2)
}
const unknown = wanted.filter((name) => !(name in folders))
if (unknown.length > 0) {
  console.error(`unknown folder ${unknown.join(', ')}: one of ${Object.keys(folders).join(', ')}`)
  process.exit(2)
}

interface Score {
  folder: string
  killed: number
  timedOut: number
  survived: number
  noCoverage: number
  errors: number
  /** Static mutants left out (`--ignore-static`): outside the score, as StrykerJS counts it. */
  ignored: number
  seconds: number
}

/** Stryker's mutation score: killed and timed-out mutants over every valid one. */
function percent(score: Score): number {
  const detected = score.killed + score.timedOut
  const total = detected + score.survived + score.noCoverage
  return total === 0 ? 100 : (100 * detected) / total
}

function tally(folder: string, results: MutantResult[], seconds: number): Score {
  const count = (...statuses: string[]) => results.filter((r) => statuses.includes(r.status)).length
  return {
    folder,
    killed: count('Killed'),
    timedOut: count('Timeout'),
    survived: count('Survived'),
    noCoverage: count('NoCoverage'),
    errors: count('CompileError', 'RuntimeError'),
    ignored: count('Ignored'),
    seconds,
  }
}

/** Every mutant no test killed, one line each, for the reader deciding which are equivalent. */
function survivorLines(results: MutantResult[]): string {
  return results
    .filter((r) => r.status === 'Survived' || r.status === 'NoCoverage')
    .map((r) => {
      const at = `${relative(root, r.fileName)}:${r.location.start.line}:${r.location.start.column}`
      const replacement = r.replacement.replace(/\s+/g, ' ').slice(0, 100)
      return `${at} ${r.status} ${r.mutatorName}: ${replacement}\n`
    })
    .join('')
}

async function runFolder(folder: string): Promise<Score> {
  const reportDir = join('reports', 'mutation', folder)
  const started = Date.now()
  // vitest.mutation.config.ts runs this folder's tests only; test/support/mutation.ts reads it too.
  process.env.FEEDRUNNER_MUTATION_FOLDER = folder
  const base: PartialStrykerOptions = {
    configFile: join(root, 'stryker.config.mjs'),
    // A sandbox per folder, so two folders can run at once.
    tempDirName: join('.stryker-tmp', folder),
    ...(concurrency === undefined ? {} : { concurrency }),
  }
  // `--files a.ts,b.ts`: those files of the folder only (a file measured again after new tests).
  const files = options.files?.split(',') ?? folders[folder] ?? []
  const listed = options['static-only'] ? await listStatic(base, files) : undefined
  if (listed?.length === 0) return tally(folder, [], Math.round((Date.now() - started) / 1000))
  const ran = await new Stryker({
    ...base,
    ...(listed === undefined
      ? { mutate: files }
      : measureListed(listed, join(root, reportDir, 'static-mutants.json'))),
    htmlReporter: { fileName: join(reportDir, 'index.html') },
    jsonReporter: { fileName: join(reportDir, 'mutation.json') },
    // A mutant in code that runs as a module loads (a schema, a table) is run against every test on
    // freshly loaded modules: in pipeline 12 % of the mutants and two thirds of the time.
    ...(options['ignore-static'] ? { ignoreStatic: true } : {}),
  }).runMutationTest()
  const results = listed === undefined ? ran : onlyListed(ran, listed)
  mkdirSync(join(root, reportDir), { recursive: true })
  writeFileSync(join(root, reportDir, 'survivors.txt'), survivorLines(results))
  return tally(folder, results, Math.round((Date.now() - started) / 1000))
}

const scores: Score[] = []
for (const folder of wanted.length > 0 ? wanted : Object.keys(folders)) {
  scores.push(await runFolder(folder))
}
// `errors`: mutants that break the module as it loads (a table row made empty), which StrykerJS
// leaves out of the score.
console.log('\nfolder    score  killed  timeout  survived  no-cover   errors  ignored  time')
for (const s of scores) {
  const cells = [s.killed, s.timedOut, s.survived, s.noCoverage, s.errors, s.ignored].map((n) =>
    String(n).padStart(7),
  )
  console.log(
    `${s.folder.padEnd(9)} ${percent(s).toFixed(1).padStart(5)}% ${cells.join('  ')}  ${s.seconds}s`,
  )
}
const below = scores.filter((s) => percent(s) < 85)
process.exitCode = below.length > 0 ? 1 : 0
