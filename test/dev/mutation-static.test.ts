import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { MutantResult } from '@stryker-mutator/api/core'
import { afterEach, describe, expect, it } from 'vitest'
import { measureListed, onlyListed } from '../../bin/mutation-static.ts'
import { listedOnly } from '../../bin/stryker-static.mjs'

// `npm run mutation -- --static-only` measures the static mutants alone: the ranges StrykerJS mutates
// and the ignorer that keeps only the nodes holding one decide which mutants run, and the score
// counts only those listed. A column off by one there measures a neighbour, or nothing.

const root = join(import.meta.dirname, '..', '..')
const scratch = mkdtempSync(join(tmpdir(), 'mutation-static-'))
const saved = process.env.FEEDRUNNER_STATIC_MUTANTS
afterEach(() => {
  if (saved === undefined) delete process.env.FEEDRUNNER_STATIC_MUTANTS
  else process.env.FEEDRUNNER_STATIC_MUTANTS = saved
})
process.on('exit', () => rmSync(scratch, { recursive: true, force: true }))

/** A mutant as StrykerJS reports it: lines and columns from 1, the end column past the last. */
function mutant(line: number, from: number, to: number, replacement = '""'): MutantResult {
  return {
    id: `${line}:${from}`,
    fileName: join(root, 'src/pipeline/tasks/bridge.ts'),
    mutatorName: 'StringLiteral',
    replacement,
    status: 'Survived',
    location: { start: { line, column: from }, end: { line, column: to } },
  } as MutantResult
}

const ignorer = { shouldIgnore: (path: unknown) => listedOnly.shouldIgnore(path as never) }
/** A node of bridge.ts as babel gives it to an ignorer: columns from 0, the end past the last. */
const node = (line: number, from: number, endLine: number, to: number) => ({
  hub: { file: { opts: { filename: join(root, 'src/pipeline/tasks/bridge.ts') } } },
  node: { loc: { start: { line, column: from }, end: { line: endLine, column: to } } },
})

describe('the static mutants measured alone', () => {
  it("names each listed mutant's range with columns from 0, as StrykerJS's mutate reads them", () => {
    const file = join(scratch, 'ranges.json')
    const options = measureListed([mutant(31, 11, 17), mutant(35, 5, 18)], file)
    expect(options.mutate).toEqual([
      'src/pipeline/tasks/bridge.ts:31:10-31:16',
      'src/pipeline/tasks/bridge.ts:35:4-35:17',
    ])
    expect(options.ignorers).toEqual(['listed-only'])
    expect(process.env.FEEDRUNNER_STATIC_MUTANTS).toBe(file)
    expect(JSON.parse(readFileSync(file, 'utf8'))).toEqual({
      'src/pipeline/tasks/bridge.ts': [
        { start: { line: 31, column: 10 }, end: { line: 31, column: 16 } },
        { start: { line: 35, column: 4 }, end: { line: 35, column: 17 } },
      ],
    })
  })

  it('keeps the nodes that hold a listed mutant and leaves out every other', () => {
    measureListed([mutant(31, 11, 17)], join(scratch, 'ignorer.json'))
    // The mutant's own node, and the statement and table that hold it, stay.
    expect(ignorer.shouldIgnore(node(31, 10, 31, 16))).toBeUndefined()
    expect(ignorer.shouldIgnore(node(28, 0, 80, 1))).toBeUndefined()
    // A node inside it, one beside it, and one a column short of it are left out.
    expect(ignorer.shouldIgnore(node(31, 11, 31, 15))).toMatch(/^not static/)
    expect(ignorer.shouldIgnore(node(32, 4, 32, 10))).toMatch(/^not static/)
    expect(ignorer.shouldIgnore(node(31, 10, 31, 15))).toMatch(/^not static/)
  })

  it('counts only the listed mutants of a run, the same one in both runs whatever its id', () => {
    const listed = [mutant(31, 11, 17)]
    const ran = [
      { ...mutant(31, 11, 17), id: '900', status: 'Killed' },
      mutant(31, 11, 17, '"Stryker was here!"'),
      mutant(32, 5, 9),
    ] as MutantResult[]
    expect(onlyListed(ran, listed).map((result) => [result.id, result.status])).toEqual([
      ['900', 'Killed'],
    ])
  })
})
