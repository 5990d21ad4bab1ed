import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import type { Command } from 'commander'
import { describe, expect, it } from 'vitest'
import { buildProgram } from '../../src/cli/program.ts'

// The README's table of commands names every command feedrunner has (`runs replay` was missing
// from it), and the README stays a front page: under 250 lines.

const readme = readFileSync(join(import.meta.dirname, '../../README.md'), 'utf8')

/** Every command a user runs: `status`, `runs show`, `keys export`, ... (help is not one). */
function leafCommands(program: Command): string[] {
  return program.commands
    .filter((command) => command.name() !== 'help')
    .flatMap((command) => {
      const subs = command.commands.filter((sub) => sub.name() !== 'help')
      return subs.length === 0
        ? [command.name()]
        : subs.map((sub) => `${command.name()} ${sub.name()}`)
    })
}

/**
 * The commands each row of the "## Commands" table names in its first cell: `feedrunner keys
 * create`, `import`, `list` names keys create, keys import and keys list.
 */
function tableCommands(text: string): string[] {
  const start = text.indexOf('## Commands')
  const section = text.slice(start, text.indexOf('\n## ', start + 1))
  return section
    .split('\n')
    .filter((line) => line.startsWith('| `'))
    .flatMap((line) => {
      const spans = [...line.split('|')[1]!.matchAll(/`([^`]+)`/g)].map(
        (span) => span[1]!.replace(/^feedrunner /, '').split(/ [-<[]/)[0]!,
      )
      const group = spans[0]!.split(' ')[0]!
      return spans.map((span, at) =>
        at > 0 && spans[0]!.includes(' ') && !span.includes(' ') ? `${group} ${span}` : span,
      )
    })
}

describe("the README's table of commands", () => {
  it('names every command', () => {
    const named = new Set(tableCommands(readme))
    const leaves = leafCommands(buildProgram('0.0.0-docs'))
    expect(leaves.length).toBeGreaterThan(25)
    expect(leaves.filter((leaf) => !named.has(leaf))).toEqual([])
  })

  it('reads the shorthand rows as the commands they name', () => {
    expect(
      tableCommands(
        '## Commands\n| `feedrunner keys create`, `import`, `export` | x |\n| `feedrunner adapter`, `worker` | y |\n## Next',
      ),
    ).toEqual(['keys create', 'keys import', 'keys export', 'adapter', 'worker'])
  })

  it('the README stays under 250 lines', () => {
    expect(readme.split('\n').length).toBeLessThan(250)
  })
})
