import { z } from 'zod'
import { describe, expect, it } from 'vitest'
import { errorKindOf, isRetryable } from '../../src/config/errors.ts'
import { settingExpectation } from '../../src/config/settings-expectation.ts'
import { withDefault } from '../../src/config/settings-kit.ts'
import {
  endpointOf,
  parseSettings,
  presentVariables,
  SettingsError,
} from '../../src/config/settings.ts'

// What the mutation run of src/config left alive in the settings: the error an operator reads, the
// variables that count as set, the words a bound is said in, and formats checked from their first
// character.

const KEY = `0x${'11'.repeat(32)}`

function problems(env: NodeJS.ProcessEnv): readonly string[] {
  try {
    parseSettings(env)
  } catch (error) {
    if (error instanceof SettingsError) return error.problems
    throw error
  }
  return []
}

describe('SettingsError', () => {
  it('is a config error named SettingsError, one problem a line under "Invalid settings"', () => {
    const error = new SettingsError(['EA_PORT: one', 'LOG_FORMAT: two'])
    expect(error.message).toBe('Invalid settings:\n  EA_PORT: one\n  LOG_FORMAT: two')
    expect(error.name).toBe('SettingsError')
    expect(String(error)).toBe(
      'SettingsError: Invalid settings:\n  EA_PORT: one\n  LOG_FORMAT: two',
    )
    expect(error.kind).toBe('config')
    expect(errorKindOf(error)).toBe('config')
    expect(isRetryable(error)).toBe(false)
  })

  it('as parseSettings throws it, every problem on its own line', () => {
    expect(() => parseSettings({ EA_PORT: 'x', LOG_FORMAT: 'xml' })).toThrow(
      'Invalid settings:\n  LOG_FORMAT: expected one of json, pretty (got "xml")\n  EA_PORT: expected a port number from 1 to 65535 (got "x")',
    )
  })
})

describe('the variables that count as set', () => {
  it('leaves out a variable that holds undefined, as well as an empty one', () => {
    expect(Object.keys(presentVariables({ A: undefined, B: 'b', C: '' }))).toEqual(['B'])
    // A misspelt name that holds nothing was not set: it stops no start.
    expect(problems({ RPC_ULR: undefined })).toEqual([])
    expect(problems({ RPC_ULR: 'http://x' })[0]).toContain('RPC_ULR: did you mean RPC_URL?')
  })

  it('reads a boolean written as false or 0 as false', () => {
    expect(parseSettings({ ALLOW_CLIENT_KEYS: 'false' }).ALLOW_CLIENT_KEYS).toBe(false)
    expect(parseSettings({ DASHBOARD_ENABLED: 'false' }).DASHBOARD_ENABLED).toBe(false)
    expect(parseSettings({ DASHBOARD_ENABLED: '0' }).DASHBOARD_ENABLED).toBe(false)
  })
})

describe('formats checked from the first character', () => {
  it('refuses a Redis URL with anything before its scheme', () => {
    expect(problems({ REDIS_URL: 'xredis://h:1' })).toEqual([
      'REDIS_URL: expected redis://host:port[/db], rediss://... or redis+cluster://host:port[,host:port...] (got h:1)',
    ])
  })

  it('refuses a dashboard path that does not start with a slash', () => {
    expect(problems({ DASHBOARD_PATH: 'ops/queues' })).toEqual([
      'DASHBOARD_PATH: expected a path such as /dashboard (no trailing slash) (got "ops/queues")',
    ])
  })

  it('says only the format of a private key with more than 64 hex digits, not its value', () => {
    expect(problems({ NODE_PRIVATE_KEY: `${KEY}00` })).toEqual([
      'NODE_PRIVATE_KEY: expected a 0x-prefixed 32-byte hex private key',
    ])
    expect(problems({ NODE_PRIVATE_KEY: `0x${'0'.repeat(64)}zz` })).toEqual([
      'NODE_PRIVATE_KEY: expected a 0x-prefixed 32-byte hex private key',
    ])
  })

  it('says what trusted proxies take, by item', () => {
    expect(problems({ ADAPTER_TRUSTED_PROXIES: '10.0.0.5,proxy.example' })).toEqual([
      'ADAPTER_TRUSTED_PROXIES (item 2): expected addresses or CIDR ranges, comma separated, such as 10.0.0.5,10.1.0.0/16,fd00::/8 (got "10.0.0.5,proxy.example")',
    ])
  })

  it('reads a URL as a cluster node list only when it starts with redis+cluster://', () => {
    expect(endpointOf('https://proxy.example/redis+cluster://a:1')).toBe('proxy.example:443')
    expect(endpointOf('http://h/?next=redis+cluster://user:pw@a:1')).toBe('h:80')
  })
})

describe('a default that is a list', () => {
  it('is shown in the docs comma separated, and applied whole', () => {
    const declared = withDefault(z.array(z.string()), ['a', 'b'], {
      group: 'fetch',
      description: 'A list.',
    })
    expect(declared.info.default).toBe('a,b')
    expect(declared.schema.parse(undefined)).toEqual(['a', 'b'])
  })
})

describe('what a number setting expects, in words', () => {
  const info = { group: 'bounds', description: 'A bound.' } as const
  const expects = (schema: z.ZodType, unit?: string) =>
    settingExpectation(schema, unit === undefined ? info : { ...info, unit })

  it('says an upper bound alone', () => {
    expect(expects(z.coerce.number().int().max(10), 'runs')).toBe(
      'a whole number of runs, 10 or less',
    )
    expect(expects(z.coerce.number().int().lt(10))).toBe('a whole number, 9 or less')
  })

  it('says the last whole number below a bound that is not itself allowed', () => {
    expect(expects(z.coerce.number().int().min(0).lt(10), 's')).toBe(
      'a whole number of s from 0 to 9',
    )
    expect(expects(z.coerce.number().int().gt(0).lt(10))).toBe('a whole number from 1 to 9')
  })

  it('says a number that need not be whole, and one without bounds', () => {
    expect(expects(z.coerce.number().min(0.5), 's')).toBe('a number of s, 0.5 or more')
    expect(expects(z.coerce.number().int())).toBe('a whole number')
    expect(expects(z.coerce.number())).toBe('a number')
  })

  it('names no unit for a setting without one, or whose unit is URL', () => {
    expect(expects(z.coerce.number().int().min(1))).toBe('a whole number, 1 or more')
    expect(expects(z.coerce.number().int().min(0).max(9), 'URL')).toBe('a whole number from 0 to 9')
  })

  it('leaves out a bound that is no number', () => {
    expect(expects(z.number().min(Number.NaN))).toBe('a number')
  })
})
