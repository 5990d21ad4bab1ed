// docs/operating.md's production install, as written: `npm install` (which builds dist/ and the
// contracts), then `npm prune --omit=dev`. On a copy of this checkout whose node_modules are hard
// links (prune only unlinks, so the checkout keeps its own), with no registry needed.
import { execFile } from 'node:child_process'
import { cpSync, existsSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { promisify } from 'node:util'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { testRedisUrl, uniquePrefix } from '../support/redis.ts'

const run = promisify(execFile)
const projectRoot = resolve(import.meta.dirname, '../..')
const COPIED = [
  'package.json',
  'package-lock.json',
  'tsconfig.json',
  'tsconfig.build.json',
  'bin',
  'src',
  'contracts',
  'jobs',
  'stubs',
]

describe('a production install (npm install, then npm prune --omit=dev)', () => {
  const root = mkdtempSync(join(tmpdir(), 'feedrunner-production-'))
  const feedrunner = (args: string[], env: NodeJS.ProcessEnv = {}) =>
    run(process.execPath, [join(root, 'bin/feedrunner.js'), ...args], {
      cwd: root,
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env },
      encoding: 'utf8',
    }).then(
      (done) => ({ code: 0, output: done.stdout + done.stderr }),
      (failed: { code?: number; stdout?: string; stderr?: string }) => ({
        code: failed.code ?? -1,
        output: (failed.stdout ?? '') + (failed.stderr ?? ''),
      }),
    )

  beforeAll(async () => {
    for (const entry of COPIED)
      cpSync(join(projectRoot, entry), join(root, entry), { recursive: true })
    // A build of these sources, when there is one, spares the copy's install a compile.
    if (existsSync(join(projectRoot, 'dist')))
      cpSync(join(projectRoot, 'dist'), join(root, 'dist'), { recursive: true })
    await run('cp', ['-al', join(projectRoot, 'node_modules'), join(root, 'node_modules')])
    const npm = (args: string[]) =>
      run('npm', [...args, '--offline', '--no-audit', '--no-fund'], {
        cwd: root,
        encoding: 'utf8',
        timeout: 600_000,
      })
    await npm(['install'])
    await npm(['prune', '--omit=dev'])
  }, 900_000)
  afterAll(() => rmSync(root, { recursive: true, force: true }))

  it('has none of the dev tools, and runs from what was built', async () => {
    for (const tool of ['@foundry-rs/anvil', 'solc-0.8.19', 'solc-0.6.6', 'tsx', 'vitest'])
      expect(existsSync(join(root, 'node_modules', tool)), tool).toBe(false)
    const validated = await feedrunner(['jobs', 'validate'], { JOBS_DIR: join(root, 'jobs') })
    expect(validated.output).toMatch(/(\d+) of \1 specs valid/)
    expect(validated.code, validated.output).toBe(0)
  }, 120_000)

  it('dev says it needs anvil and how to get it, in one line, and exits 1', async () => {
    const dev = await feedrunner(['dev'], {
      REDIS_URL: testRedisUrl(),
      QUEUE_PREFIX: uniquePrefix('production-install'),
    })
    expect(dev.code, dev.output).toBe(1)
    expect(dev.output).toContain('the dev chain needs anvil')
    expect(dev.output).toContain('install with the dev dependencies (npm install)')
    expect(dev.output).not.toMatch(/^\s+at |Require stack/m)
  }, 120_000)
})
