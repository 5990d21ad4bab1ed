import { spawnSync } from 'node:child_process'
import { copyFileSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { BaseSettingsDefinition } from '@chainlink/external-adapter-framework/config/index.js'
import { editDistance, FRAMEWORK_SETTINGS, meantSetting } from '../../src/config/setting-names.ts'
import { parseSettings, SETTING_NAMES, SETTINGS } from '../../src/config/settings.ts'

const root = join(import.meta.dirname, '../..')

function problemsOf(env: Record<string, string>): string {
  try {
    parseSettings(env)
    return ''
  } catch (error) {
    return (error as Error).message
  }
}

describe('a misspelt setting is named with the setting it meant', () => {
  it('names the known setting, in the words of the issue', () => {
    expect(problemsOf({ NODE_PRIVATEKEY: '0x12' })).toContain(
      'NODE_PRIVATEKEY: did you mean NODE_PRIVATE_KEY?',
    )
    expect(problemsOf({ FEED_APIKEY: 'secret-feed-key' })).toContain(
      'FEED_APIKEY: did you mean FEED_API_KEY?',
    )
    expect(problemsOf({ REDIS_URI: 'redis://127.0.0.1:6379' })).toContain(
      'REDIS_URI: did you mean REDIS_URL?',
    )
    expect(problemsOf({ RPC_ULR: 'http://127.0.0.1:8545' })).toContain(
      'RPC_ULR: did you mean RPC_URL?',
    )
  })

  it('never repeats the value (it may be a key) and reports it with the other problems', () => {
    const message = problemsOf({ FEED_APIKEY: 'secret-feed-key', EA_PORT: 'x' })
    expect(message).not.toContain('secret-feed-key')
    expect(message).toContain('EA_PORT')
    expect(message).toContain('FEED_APIKEY')
  })

  it("leaves alone the EA framework's settings, the patterned ones and names far from any", () => {
    for (const name of ['EA_HOST', 'METRICS_ENABLED', 'CACHE_TYPE', 'BRIDGE_DATAFEED_URL'])
      expect(meantSetting(name, SETTING_NAMES), name).toBeUndefined()
    for (const name of ['FEED_KEY_PARTNER', 'BENCH_RATE', 'REDIS_PORT', 'HOSTNAME', 'PATH'])
      expect(meantSetting(name, SETTING_NAMES), name).toBeUndefined()
    expect(problemsOf({ EA_HOST: '127.0.0.1', BRIDGE_X_URL: 'http://a' })).toBe('')
  })

  it('this test process’s own environment holds no false alarm', () => {
    expect(problemsOf(process.env as Record<string, string>)).not.toMatch(/did you mean/)
  })

  it("knows the EA framework's settings as the framework lists them", () => {
    expect([...FRAMEWORK_SETTINGS].sort()).toEqual(Object.keys(BaseSettingsDefinition).sort())
  })

  it('counts an adjacent swap as one edit', () => {
    expect(editDistance('RPC_ULR', 'RPC_URL')).toBe(1)
    expect(editDistance('NODE_PRIVATEKEY', 'NODE_PRIVATE_KEY')).toBe(1)
  })

  it('measures as the whole table does (the rows it keeps are enough)', () => {
    const table = (a: string, b: string): number => {
      const d = Array.from({ length: a.length + 1 }, (_, i) =>
        Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)),
      )
      for (let i = 1; i <= a.length; i++)
        for (let j = 1; j <= b.length; j++) {
          d[i]![j] = Math.min(
            d[i - 1]![j]! + 1,
            d[i]![j - 1]! + 1,
            d[i - 1]![j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1),
          )
          if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1])
            d[i]![j] = Math.min(d[i]![j]!, d[i - 2]![j - 2]! + 1)
        }
      return d[a.length]![b.length]!
    }
    const name = fc.stringMatching(/^[A-D_]{0,12}$/)
    fc.assert(
      fc.property(name, name, (a, b) => {
        expect(editDistance(a, b)).toBe(table(a, b))
      }),
      { numRuns: 2_000 },
    )
  })

  it('names the setting meant whatever the length of the names around it', () => {
    expect(meantSetting('RPC_ULR', SETTING_NAMES)).toBe('RPC_URL')
    expect(meantSetting('NODE_PRIVATEKEY', SETTING_NAMES)).toBe('NODE_PRIVATE_KEY')
    expect(meantSetting('REDIS_UR', SETTING_NAMES)).toBe('REDIS_URL')
    expect(meantSetting('SOME_VARIABLE_OF_ANOTHER_PROGRAM', SETTING_NAMES)).toBeUndefined()
  })
})

describe('.env.example as copied', () => {
  it('sets nothing: a process reading it as .env starts with every default', () => {
    const dir = mkdtempSync(join(tmpdir(), 'feedrunner-env-example-'))
    try {
      copyFileSync(join(root, '.env.example'), join(dir, '.env'))
      const inherited = { ...process.env }
      for (const name of Object.keys(SETTINGS)) delete inherited[name]
      const tsx = new URL('../../node_modules/tsx/dist/loader.mjs', import.meta.url).href
      const fixture = join(import.meta.dirname, 'fixtures/print-settings.ts')
      const child = spawnSync(process.execPath, ['--import', tsx, fixture], {
        cwd: dir,
        env: inherited,
        encoding: 'utf8',
      })
      expect(child.status, child.stderr).toBe(0)
      const { file, settings } = JSON.parse(child.stdout) as { file: string; settings: unknown }
      expect(file).toBe('.env')
      expect(settings).toEqual(JSON.parse(JSON.stringify(parseSettings({}))))
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})
