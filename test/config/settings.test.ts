import { describe, expect, it } from 'vitest'
import { createLogger, parseSettings, required, SettingsError } from '../../src/config/index.ts'
import { Writable } from 'node:stream'
import { spawnSync } from 'node:child_process'
import { inMutationRun } from '../support/mutation.ts'

/** The stdout lines of a process that logs `lines` lines and then ends as `end` says. */
function linesLoggedBefore(end: 'exit' | 'throw' | 'return', lines: number): string[] {
  const fixture = new URL('./fixtures/log-then-exit.ts', import.meta.url).pathname
  const child = spawnSync(process.execPath, ['--import', 'tsx', fixture], {
    env: { ...process.env, END: end, LINES: String(lines) },
    encoding: 'utf8',
  })
  return child.stdout.split('\n').filter((line) => line.includes('"msg":"line"'))
}

describe('settings', () => {
  it('applies defaults when the environment is empty', () => {
    const settings = parseSettings({})
    expect(settings.REDIS_URL).toBe('redis://127.0.0.1:6379')
    expect(settings.SIGNKEY_MODE).toBe('static')
    expect(settings.ALLOW_CLIENT_KEYS).toBe(false)
  })

  it('names the variable and what it expects', () => {
    expect(() => parseSettings({ EA_PORT: 'eighty' })).toThrow(/EA_PORT: .*number.*"eighty"/s)
    expect(() => parseSettings({ SIGNKEY_MODE: 'loose' })).toThrow(
      /SIGNKEY_MODE: .*static.*signed/s,
    )
    expect(() => parseSettings({ SPORTS_URL: 'not a url' })).toThrow(/SPORTS_URL: expected a URL/)
  })

  it('never repeats a secret value in an error', () => {
    try {
      parseSettings({ NODE_PRIVATE_KEY: 'my-secret-private-key' })
      expect.fail('should throw')
    } catch (error) {
      expect(error).toBeInstanceOf(SettingsError)
      expect((error as Error).message).toContain('NODE_PRIVATE_KEY')
      expect((error as Error).message).not.toContain('my-secret-private-key')
    }
  })

  it('says which setting a part needs', () => {
    expect(() => required(parseSettings({}), 'RPC_URL', 'the runner')).toThrow(
      'RPC_URL: required for the runner',
    )
  })

  it('the logger removes secrets by field and by value', () => {
    const key = 'feed-key-1234567890'
    const lines: string[] = []
    const destination = new Writable({
      write: (chunk, _enc, done) => (lines.push(String(chunk)), done()),
    })
    const logger = createLogger(parseSettings({ FEED_API_KEY: key }), 'test', destination)
    logger.info(
      { key, url: `http://x/?key=${key}`, nested: { apiKey: 'abc' } },
      `fetched with ${key}`,
    )
    const written = lines.join('')
    expect(written).toContain('fetched with [redacted]')
    expect(written).not.toContain(key)
    expect(written).not.toContain('abc')
  })

  // The logger writes asynchronously; what it holds when the process ends must still come out.
  // Spawned: no mutant can reach the child (test/support/mutation.ts).
  it.skipIf(inMutationRun)(
    'writes every line logged before process.exit, an uncaught error or the end of the program',
    () => {
      for (const end of ['exit', 'throw', 'return'] as const) {
        const lines = linesLoggedBefore(end, 3_000)
        expect(lines, end).toHaveLength(3_000)
        expect(JSON.parse(lines.at(-1) as string), end).toMatchObject({ index: 2_999 })
      }
    },
    30_000,
  )
})
