import { spawnSync } from 'node:child_process'
import { copyFileSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { ANVIL_PRIVATE_KEYS } from '../../src/dev/anvil.ts'
import { documentationFiles } from '../docs/support.ts'
import { shellCommands } from '../docs/shell-words.ts'
import { runFeedrunner } from '../e2e/support/cli.ts'

// Key files written by `feedrunner keys` never go into git unnoticed: the docs' own paths are
// ignored by the checkout's .gitignore, and a command that writes where git would commit says so on
// stderr before it writes. Git itself is asked (git status, git check-ignore).

const projectRoot = join(import.meta.dirname, '../..')
const made: string[] = []

afterAll(() => {
  for (const dir of made) rmSync(dir, { recursive: true, force: true })
})

function git(cwd: string, ...args: string[]): { status: number | null; stdout: string } {
  const ran = spawnSync('git', args, { cwd, encoding: 'utf8' })
  return { status: ran.status, stdout: ran.stdout }
}

/** A new git repository, as an operator's checkout or a project of their own. */
function repository(withProjectIgnore: boolean): string {
  const dir = mkdtempSync(join(tmpdir(), 'feedrunner-keys-git-'))
  made.push(dir)
  git(dir, 'init', '-q')
  if (withProjectIgnore) copyFileSync(join(projectRoot, '.gitignore'), join(dir, '.gitignore'))
  return dir
}

const PATH_OPTIONS = ['--dir', '--password-file', '--out']

/** The paths the docs give `keys` commands (--dir, --password-file, --out). */
function documentedKeyPaths(): string[] {
  return documentationFiles().flatMap((file) =>
    [...readFileSync(file, 'utf8').matchAll(/^```sh(?: runnable)?\n([\s\S]*?)^```$/gm)]
      .flatMap((block) => shellCommands(block[1]!))
      .filter((words) => words.includes('keys'))
      .flatMap((words) =>
        words.flatMap((word, at) => (PATH_OPTIONS.includes(word) ? [words[at + 1]] : [])),
      )
      .filter((path): path is string => path !== undefined && !path.startsWith('<')),
  )
}

describe('key files and git', () => {
  it("the checkout's .gitignore covers every path the docs give a keys command", () => {
    const paths = documentedKeyPaths()
    expect(paths).toEqual(expect.arrayContaining(['keys', 'keys.password']))
    for (const path of new Set(paths)) {
      // A folder's rule (`keys/`) applies to the files in it.
      const probe = path.endsWith('.password') ? path : `${path}/UTC--keystore`
      expect(git(projectRoot, 'check-ignore', '-q', probe).status, path).toBe(0)
    }
  })

  it('keys create as the docs show it, in a checkout: git status shows nothing of it, nothing said', async () => {
    const dir = repository(true)
    const created = await runFeedrunner(
      ['keys', 'create', '--dir', 'keys', '--password-file', 'keys.password'],
      {},
      120_000,
      dir,
    )
    expect(created.code, created.stderr).toBe(0)
    expect(git(dir, 'status', '--porcelain', '--untracked-files=all').stdout).toBe(
      '?? .gitignore\n',
    )
    expect(created.stderr).not.toContain('not ignored')
  }, 130_000)

  it('keys create and import where git would commit them: said on stderr, with the remedy', async () => {
    const dir = repository(false)
    const created = await runFeedrunner(
      ['keys', 'create', '--dir', 'node-keys', '--password-file', 'node.pass'],
      {},
      120_000,
      dir,
    )
    expect(created.code, created.stderr).toBe(0)
    expect(created.stderr).toContain(
      `node-keys/ and node.pass are in the git checkout ${dir} and not ignored: git add -A would commit them. ` +
        `Keep keys out of git: add /node-keys/ and /node.pass to ${join(dir, '.gitignore')}`,
    )
    const imported = await runFeedrunner(
      ['keys', 'import', '--private-key-env', 'RAW_KEY', '--dir', 'more-keys'],
      { RAW_KEY: ANVIL_PRIVATE_KEYS[5], KEYSTORE_PASSWORD_FILE: 'node.pass' },
      120_000,
      dir,
    )
    expect(imported.code, imported.stderr).toBe(0)
    expect(imported.stderr).toContain('more-keys/ is in the git checkout')
    // Outside any work tree there is nothing to say.
    const outside = mkdtempSync(join(tmpdir(), 'feedrunner-keys-nogit-'))
    made.push(outside)
    const plain = await runFeedrunner(
      ['keys', 'create', '--dir', 'keys', '--password-file', 'keys.password'],
      { GIT_CEILING_DIRECTORIES: tmpdir() },
      120_000,
      outside,
    )
    expect(plain.code, plain.stderr).toBe(0)
    expect(plain.stderr).not.toContain('git')
  }, 200_000)
})
