import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { spawnSync } from 'node:child_process'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { GENERATED_CONFIG_FILES } from '../../src/config/settings-docs.ts'
import {
  parseSettings,
  SENSITIVE_SETTINGS,
  SETTINGS,
  SettingsError,
} from '../../src/config/settings.ts'
import { inMutationRun } from '../support/mutation.ts'

const root = new URL('../../', import.meta.url)
const zeroKey = `0x${'0'.repeat(64)}`

describe('the settings schema as the one source', () => {
  it('every setting has a description, and a default or what its absence means', () => {
    for (const [name, info] of Object.entries(SETTINGS)) {
      expect(info.description.length, name).toBeGreaterThan(10)
      expect(info.default !== undefined || info.whenUnset !== undefined, name).toBe(true)
    }
    expect(SENSITIVE_SETTINGS).toEqual(
      expect.arrayContaining(['NODE_PRIVATE_KEY', 'NODE_PRIVATE_KEYS', 'FEED_API_KEY']),
    )
  })

  it('the defaults the docs show are the ones the schema applies', () => {
    const parsed = parseSettings({}) as Record<string, unknown>
    for (const [name, info] of Object.entries(SETTINGS)) {
      if (info.default === undefined) expect(parsed[name], name).toBeUndefined()
      else expect(String(parsed[name]), name).toBe(info.default)
    }
  })

  // Fails when a setting changed and `npm run docs:config` was not run.
  for (const [file, render] of Object.entries(GENERATED_CONFIG_FILES)) {
    it(`${file} is the one generated from the schema (npm run docs:config)`, () => {
      expect(readFileSync(new URL(file, root), 'utf8')).toBe(render())
    })
  }

  it('the generated docs list every setting, the patterns and the EA framework settings link', () => {
    const doc = readFileSync(new URL('docs/configuration.md', root), 'utf8')
    for (const name of Object.keys(SETTINGS)) expect(doc).toContain(`| \`${name}\` |`)
    expect(doc).toContain('BRIDGE_<NAME>_URL')
    expect(doc).toMatch(/ea-framework-js\/.*ea-settings\.md/)
  })
})

describe('settings checked at start', () => {
  const orderKey = '0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141'

  it('a zero or out-of-range node key is named and explained, and never printed', () => {
    for (const [key, why] of [
      [zeroKey, 'it is zero'],
      [orderKey, 'it is not below the curve order'],
    ] as const) {
      try {
        parseSettings({ NODE_PRIVATE_KEY: key })
        expect.fail('should throw')
      } catch (error) {
        expect(error).toBeInstanceOf(SettingsError)
        const message = (error as Error).message
        expect(message).toContain(`NODE_PRIVATE_KEY is not a valid secp256k1 private key (${why})`)
        expect(message).not.toContain(key.slice(2, 20))
      }
    }
  })

  it('names the item of a key list, and every problem at once', () => {
    const good = `0x${'1'.repeat(64)}`
    const parse = () =>
      parseSettings({ NODE_PRIVATE_KEYS: `${good},${zeroKey}`, EA_PORT: 'x', LOG_FORMAT: 'xml' })
    expect(parse).toThrow(/NODE_PRIVATE_KEYS \(item 2\) is not a valid secp256k1 private key/)
    expect(parse).toThrow(/EA_PORT: .*"x"/)
    expect(parse).toThrow(/LOG_FORMAT: .*json.*pretty.*"xml"/)
  })

  it('shows a bad URL only by host and port (a path or query may carry an API key)', () => {
    try {
      parseSettings({ RPC_URL: 'ftp://rpc.example:8545/v2/secret-api-key' })
      expect.fail('should throw')
    } catch (error) {
      expect((error as Error).message).toContain('RPC_URL: expected an http(s):// or ws(s)://')
      expect((error as Error).message).toContain('rpc.example')
      expect((error as Error).message).not.toContain('secret-api-key')
    }
  })
})

// Spawned: no mutant can reach the child (test/support/mutation.ts).
describe.skipIf(inMutationRun)('.env', () => {
  function settingsIn(dir: string, env: Record<string, string>) {
    const fixture = new URL('./fixtures/print-settings.ts', import.meta.url).pathname
    const inherited = { ...process.env }
    for (const name of Object.keys(SETTINGS)) delete inherited[name]
    // The child runs in another folder: tsx is found from here.
    const tsx = new URL('../../node_modules/tsx/dist/loader.mjs', import.meta.url).href
    return spawnSync(process.execPath, ['--import', tsx, fixture], {
      cwd: dir,
      env: { ...inherited, ...env },
      encoding: 'utf8',
    })
  }

  it('is read from the working directory, and the environment wins over it', () => {
    const dir = mkdtempSync(join(tmpdir(), 'feedrunner-dotenv-'))
    try {
      writeFileSync(join(dir, '.env'), 'QUEUE_PREFIX=from-file\nJOBS_DIR=file-jobs\n')
      const child = settingsIn(dir, { JOBS_DIR: 'env-jobs' })
      expect(child.status, child.stderr).toBe(0)
      const { file, settings } = JSON.parse(child.stdout)
      expect(file).toBe('.env')
      expect(settings.QUEUE_PREFIX).toBe('from-file')
      expect(settings.JOBS_DIR).toBe('env-jobs')
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })

  it('a bad value from .env is named like one from the environment, without a secret', () => {
    const dir = mkdtempSync(join(tmpdir(), 'feedrunner-dotenv-'))
    try {
      writeFileSync(join(dir, '.env'), `NODE_PRIVATE_KEY=${zeroKey}\n`)
      const child = settingsIn(dir, {})
      expect(child.status).toBe(1)
      expect(child.stderr).toContain('NODE_PRIVATE_KEY is not a valid secp256k1 private key')
      expect(child.stderr).not.toContain(zeroKey)
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})
