import { existsSync, readFileSync, statSync } from 'node:fs'
import { join } from 'node:path'
import type { Command, Option } from 'commander'
import { describe, expect, it } from 'vitest'
import { buildProgram } from '../../src/cli/program.ts'
import { documentationFiles } from './support.ts'
import { isPlaceholder, shellCommands } from './shell-words.ts'

// Every command the README and docs/ show, in a ```sh block or in `inline code`, names a feedrunner
// command and options that exist, an npm script that exists and files that exist. The blocks marked
// ```sh runnable are also run, as written, by commands.test.ts (```sh first-week by
// test/e2e/first-week.test.ts); the others (a production server, a
// container, a placeholder to fill in) are checked here without running.

const projectRoot = join(import.meta.dirname, '../..')
const program = buildProgram('0.0.0-docs')
const scripts = (
  JSON.parse(readFileSync(join(projectRoot, 'package.json'), 'utf8')) as {
    scripts: Record<string, string>
  }
).scripts

/** How a command line starts when it runs a program (a block of output does not). */
const COMMAND_START = /^(?:[A-Z_][A-Z0-9_]*=\S*\s+)*(?:npx|npm|feedrunner|curl|docker|node)\s/

interface Shown {
  where: string
  words: string[]
}

interface DocumentCommands {
  shown: Shown[]
  /** Blocks of commands fenced with no language instead of ```sh. */
  unmarked: string[]
}

function documentCommands(file: string): DocumentCommands {
  const name = file.slice(projectRoot.length + 1)
  const lines = readFileSync(file, 'utf8').split('\n')
  const result: DocumentCommands = { shown: [], unmarked: [] }
  for (let at = 0; at < lines.length; at++) {
    const fence = /^```(.*)$/.exec(lines[at]!)
    if (fence) {
      const start = at
      const body: string[] = []
      for (at++; at < lines.length && lines[at] !== '```'; at++) body.push(lines[at]!)
      const where = `${name}:${start + 1}`
      if (fence[1] === 'sh' || fence[1]!.startsWith('sh ')) {
        for (const words of shellCommands(body.join('\n'))) result.shown.push({ where, words })
      } else if (
        fence[1] === '' &&
        COMMAND_START.test(body.find((line) => line.trim() !== '') ?? '')
      ) {
        // Output is fenced as ```text; a block with no language that starts with a command is one.
        result.unmarked.push(where)
      }
      continue
    }
    for (const span of lines[at]!.matchAll(/`([^`]+)`/g)) {
      if (COMMAND_START.test(`${span[1]!} `))
        for (const words of shellCommands(span[1]!))
          result.shown.push({ where: `${name}:${at + 1}`, words })
    }
  }
  return result
}

function optionNamed(command: Command, name: string): Option | undefined {
  return command.options.find((option) => option.long === name || option.short === name)
}

/** Problems of `feedrunner <words>`: an unknown command, an unknown option, too many arguments. */
function feedrunnerProblems(words: readonly string[]): string[] {
  let command = program
  const path = ['feedrunner']
  let positionals = 0
  for (let at = 0; at < words.length; at++) {
    const word = words[at]!
    if (word === '...' || word === '…') continue // "and more of the same"
    const subcommandsLeft = command.commands.length > 0 && positionals === 0
    if (isPlaceholder(word)) {
      if (subcommandsLeft) return [] // `feedrunner <command> --help`: nothing more to check
      positionals++
      continue
    }
    if (word.startsWith('-')) {
      const name = word.split('=')[0]!
      if (
        name === '--help' ||
        name === '-h' ||
        (command === program && /^(-V|--version)$/.test(name))
      )
        continue
      const option = optionNamed(command, name)
      if (!option) return [`${path.join(' ')} has no option ${name}`]
      if ((option.required || option.optional) && !word.includes('=')) at++
      continue
    }
    if (subcommandsLeft) {
      const next = command.commands.find(
        (sub) => sub.name() === word || sub.aliases().includes(word),
      )
      if (next) {
        command = next
        path.push(word)
        continue
      }
      if (word !== 'help') return [`${path.join(' ')} has no command ${word}`]
    }
    positionals++
  }
  const declared = command.registeredArguments
  if (positionals > declared.length && !declared.at(-1)?.variadic)
    return [`${path.join(' ')} takes ${declared.length} arguments, shown with ${positionals}`]
  return []
}

function npmProblems(words: readonly string[]): string[] {
  const [verb, script] = words
  if (verb === 'install' || verb === 'ci') return []
  // Dropping the dev dependencies after the build (docs/operating.md, test/e2e/production-install).
  if (verb === 'prune' && words.slice(1).join(' ') === '--omit=dev') return []
  if (verb === 'start' || verb === 'test') return verb in scripts ? [] : [`no npm script ${verb}`]
  if (verb === 'run' && script !== undefined)
    return script in scripts ? [] : [`no npm script ${script}`]
  return [`npm ${verb ?? ''}: not a command the docs should show`]
}

/** A word naming a file or folder of this checkout (its first folder exists here). */
function repositoryPath(word: string): string | undefined {
  if (!/^[\w.-]+\/[\w./-]*$/.test(word) || isPlaceholder(word)) return undefined
  const top = join(projectRoot, word.split('/')[0]!)
  return existsSync(top) && statSync(top).isDirectory() ? word : undefined
}

/** What is wrong with one shown command; empty when it names only things that exist. */
export function commandProblems(shown: readonly string[]): string[] {
  const words = [...shown]
  while (words.length > 0 && /^[A-Za-z_][A-Za-z0-9_]*=/.test(words[0]!)) words.shift()
  const [head, ...rest] = words
  const missing = rest
    .map(repositoryPath)
    .filter((path): path is string => path !== undefined && !existsSync(join(projectRoot, path)))
    .map((path) => `no file ${path} in the checkout`)
  if (head === 'feedrunner') return [...missing, ...feedrunnerProblems(rest)]
  if (head === 'npx' && rest[0] === 'feedrunner')
    return [...missing, ...feedrunnerProblems(rest.slice(1))]
  if (head === 'npm') return [...missing, ...npmProblems(rest)]
  if (head === 'docker' && rest[0] === 'run') {
    // `docker run [options] feedrunner <command>`: the image's entrypoint is the CLI.
    const image = rest.indexOf('feedrunner')
    return image < 0 ? missing : [...missing, ...feedrunnerProblems(rest.slice(image + 1))]
  }
  return missing
}

describe('the commands shown in README.md and docs/', () => {
  const documents = documentationFiles().map(documentCommands)
  const shown = documents.flatMap((document) => document.shown)

  it('fences every block of commands as ```sh (or ```sh runnable)', () => {
    expect(documents.flatMap((document) => document.unmarked)).toEqual([])
  })

  it('name only commands, options, npm scripts and files that exist', () => {
    // The docs show well over a hundred commands: a reader that found none would check nothing.
    expect(shown.length).toBeGreaterThan(100)
    expect(shown.filter((one) => one.words[0] === 'feedrunner').length).toBeGreaterThan(40)
    const problems = shown.flatMap((one) =>
      commandProblems(one.words).map(
        (problem) => `${one.where}: ${one.words.join(' ')}: ${problem}`,
      ),
    )
    expect(problems).toEqual([])
  })

  it('the check finds what a wrong command gets wrong', () => {
    const wrong = [
      'npx feedrunner jobs frobnicate',
      'feedrunner request game-odds --parm region=england',
      'feedrunner runs show 0x12 0x34',
      'npm run no-such-script',
      'npx vitest run test/docs/no-such.test.ts',
      'docker run --rm feedrunner jobs valdate',
    ]
    for (const line of wrong) expect(commandProblems(shellCommands(line)[0]!), line).not.toEqual([])
    for (const right of [
      'npx feedrunner request game-odds --param sport=soccer',
      'feedrunner <command> --help',
      'JOBS_DIR=myjobs npm start',
      'feedrunner --version',
    ])
      expect(commandProblems(shellCommands(right)[0]!), right).toEqual([])
  })
})
