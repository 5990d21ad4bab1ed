import { execFileSync } from 'node:child_process'
import { dirname, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import { loadMutants } from '../../chaos/mutants.ts'

const projectRoot = resolve(dirname(fileURLToPath(import.meta.url)), '../..')

describe('planted bugs (chaos/mutants/)', () => {
  // A patch that no longer applies plants nothing: `npm run chaos -- --mutants` can only call the
  // bug unjudged, and the corpus's claim (every bug caught) silently shrinks as the code moves.
  it('each still applies to the code as it is now', () => {
    const mutants = loadMutants()
    expect(mutants.length).toBeGreaterThan(0)
    const refused = mutants.flatMap((mutant) => {
      try {
        execFileSync('git', ['apply', '--check', '--whitespace=nowarn', mutant.patch], {
          cwd: projectRoot,
          stdio: 'pipe',
        })
        return []
      } catch (error) {
        const words = String((error as { stderr?: Buffer }).stderr ?? error).trim()
        return [`${mutant.name}: ${words} (plant the bug again and write its patch anew)`]
      }
    })
    expect(refused).toEqual([])
  })
})
