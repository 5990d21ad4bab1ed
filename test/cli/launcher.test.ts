import { execFileSync, spawnSync } from 'node:child_process'
import { cpSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { unsupportedNode } from '../../bin/node-version.js'
import { sourceFingerprint } from '../../bin/source-fingerprint.js'

const projectRoot = resolve(import.meta.dirname, '../..')

/** A project with the real bin/ and node_modules, and a src/ and dist/ that each say which one ran. */
function fakeProject(): string {
  const root = mkdtempSync(join(tmpdir(), 'feedrunner-launcher-'))
  cpSync(join(projectRoot, 'bin'), join(root, 'bin'), { recursive: true })
  symlinkSync(join(projectRoot, 'node_modules'), join(root, 'node_modules'))
  writeFileSync(join(root, 'package.json'), '{ "type": "module" }\n')
  mkdirSync(join(root, 'src/cli'), { recursive: true })
  writeFileSync(
    join(root, 'src/cli/main.ts'),
    "const ran: string = 'sources through tsx'\nconsole.log(ran)\n",
  )
  return root
}

function build(root: string): void {
  mkdirSync(join(root, 'dist/cli'), { recursive: true })
  writeFileSync(join(root, 'dist/cli/main.js'), "console.log('compiled dist')\n")
  writeFileSync(
    join(root, 'dist/BUILD.json'),
    JSON.stringify({ fingerprint: sourceFingerprint(join(root, 'src')) }),
  )
}

const run = (root: string) =>
  execFileSync(process.execPath, [join(root, 'bin/feedrunner.js')], { encoding: 'utf8' }).trim()

describe('bin/feedrunner.js', () => {
  const roots: string[] = []
  afterEach(() => {
    for (const root of roots.splice(0)) rmSync(root, { recursive: true, force: true })
  })

  it('runs dist/ only while it was built from src/ as it is now, else the sources through tsx', () => {
    const root = fakeProject()
    roots.push(root)
    expect(run(root)).toBe('sources through tsx')
    build(root)
    expect(run(root)).toBe('compiled dist')
    // An edit, a new file or a removed one after the build: the build no longer describes the sources.
    writeFileSync(join(root, 'src/cli/extra.ts'), 'export {}\n')
    expect(run(root)).toBe('sources through tsx')
    build(root)
    expect(run(root)).toBe('compiled dist')
    writeFileSync(
      join(root, 'src/cli/main.ts'),
      "const ran: string = 'sources through tsx'\nconsole.log(ran) // edited\n",
    )
    expect(run(root)).toBe('sources through tsx')
  })

  it('bin/build.js leaves a build of the sources as they are alone (npx runs it again)', () => {
    const root = fakeProject()
    roots.push(root)
    build(root)
    const built = execFileSync(process.execPath, [join(root, 'bin/build.js')], {
      encoding: 'utf8',
    })
    expect(built).toContain('dist/ is already built from src/ as it is now')
    // The fake build is still there: a real one would have replaced dist/cli/main.js.
    expect(run(root)).toBe('compiled dist')
  })

  it('without tsx (no dev dependencies) and no current build, says so with the remedy', () => {
    const root = fakeProject()
    roots.push(root)
    // An install without dev dependencies: no node_modules with tsx beside bin/.
    rmSync(join(root, 'node_modules'))
    const result = spawnSync(process.execPath, [join(root, 'bin/feedrunner.js')], {
      encoding: 'utf8',
    })
    expect(result.status).toBe(1)
    expect(result.stdout).toBe('')
    expect(result.stderr).toContain(`${join(root, 'dist')} is missing or older than src/`)
    expect(result.stderr).toContain('npm install builds dist/')
    expect(result.stderr).not.toContain('    at ')
    build(root)
    expect(run(root)).toBe('compiled dist')
  })

  it('refuses a Node.js before 22 with the remedy, before it runs anything', () => {
    const root = fakeProject()
    roots.push(root)
    // This Node.js, saying it is 20 (the line on which every request was quarantined).
    const olderNode = `data:text/javascript,Object.defineProperty(process, 'version', { value: 'v20.20.2' })`
    const result = spawnSync(
      process.execPath,
      ['--import', olderNode, join(root, 'bin/feedrunner.js')],
      {
        encoding: 'utf8',
      },
    )
    expect(result.status).toBe(1)
    expect(result.stdout).toBe('')
    expect(result.stderr).toContain('this is Node.js v20.20.2')
    expect(result.stderr).toContain('Install Node.js 22 or 24')
  })

  it('takes the supported lines and those after them, and no line before 22', () => {
    for (const version of ['v22.0.0', 'v22.12.1', 'v24.11.0', 'v25.1.0'])
      expect(unsupportedNode(version, '/usr/bin/node')).toBeUndefined()
    for (const version of ['v20.20.2', 'v18.19.0', 'v21.7.3', 'not a version'])
      expect(unsupportedNode(version, '/usr/bin/node')).toContain(`this is Node.js ${version}`)
  })
})
