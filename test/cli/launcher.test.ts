import { execFileSync, spawnSync } from 'node:child_process'
import { cpSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { unsupportedNode } from '../../bin/node-version.js'
import { sourceFingerprint } from '../../bin/source-fingerprint.js'
import { SEMI_SPACE_FLAG } from '../../bin/young-generation.js'

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

  describe("every process's young generation: Node.js 22's on every line", () => {
    /** A dist/ whose main makes garbage for a while, then says what V8 gave its young generation. */
    function churningProject(): string {
      const root = fakeProject()
      roots.push(root)
      build(root)
      writeFileSync(
        join(root, 'dist/cli/main.js'),
        `import { getHeapSpaceStatistics } from 'node:v8'
let garbage = []
for (let i = 0; i < 4e6; i++) { garbage.push({ i, text: 'x' + i }); if (garbage.length > 5e4) garbage = [] }
const newSpace = getHeapSpaceStatistics().find((space) => space.space_name === 'new_space')
console.log(JSON.stringify({ pid: process.pid, execArgv: process.execArgv, newSpaceMb: newSpace.space_size / 2 ** 20 }))
`,
      )
      return root
    }

    const start = (root: string, nodeArgs: string[] = [], env: NodeJS.ProcessEnv = {}) => {
      const result = spawnSync(process.execPath, [...nodeArgs, join(root, 'bin/feedrunner.js')], {
        encoding: 'utf8',
        env: { ...process.env, NODE_OPTIONS: '', ...env },
      })
      expect(result.stderr).toBe('')
      const said = JSON.parse(result.stdout) as {
        pid: number
        execArgv: string[]
        newSpaceMb: number
      }
      return { ...said, spawnedPid: result.pid }
    }
    const major = Number(process.versions.node.split('.')[0])

    it('holds a new space of 32 MB at most (two 16 MB semi-spaces), in the process it started', () => {
      const ran = start(churningProject())
      // Node.js 24's own default grows it to 128 MB.
      expect(ran.newSpaceMb).toBeLessThanOrEqual(32)
      // Replaced in place (execve), not a child: a supervisor's PID is the process that serves.
      expect(ran.pid).toBe(ran.spawnedPid)
      expect(ran.execArgv).toEqual(major >= 24 ? [SEMI_SPACE_FLAG] : [])
    })

    it("keeps a size the operator gave, on node's command line or in NODE_OPTIONS", () => {
      const root = churningProject()
      expect(start(root, ['--max-semi-space-size=8']).execArgv).toEqual(['--max-semi-space-size=8'])
      const fromEnv = start(root, [], { NODE_OPTIONS: '--max-semi-space-size=8' })
      expect(fromEnv.execArgv).toEqual([])
      expect(fromEnv.newSpaceMb).toBeLessThanOrEqual(16)
    })
  })
})
