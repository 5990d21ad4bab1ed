import { readdirSync, readFileSync, statSync } from 'node:fs'
import { join, relative } from 'node:path'
import { describe, expect, it } from 'vitest'

const ROOT = join(import.meta.dirname, '../..')

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name)
    if (statSync(path).isDirectory()) return sourceFiles(path)
    return /\.(ts|lua)$/.test(name) ? [path] : []
  })
}

/**
 * A comment says why the code is as it is; which issue or fault-search seed found it is history, and
 * the history is in git (the commit that made the change names it).
 */
describe('comments in src/', () => {
  it('cite no issue number and no fault-search seed', () => {
    const citing = sourceFiles(join(ROOT, 'src')).flatMap((path) =>
      readFileSync(path, 'utf8')
        .split('\n')
        .flatMap((line, index) =>
          /\b(issues?|seeds?) #?\d+/i.test(line) ? [`${relative(ROOT, path)}:${index + 1}`] : [],
        ),
    )
    expect(citing).toEqual([])
  })
})
