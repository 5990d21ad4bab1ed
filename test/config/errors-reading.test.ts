import redisErrors from 'redis-errors'
import { describe, expect, it } from 'vitest'
import {
  boundOf,
  errorCodeOf,
  errorKindOf,
  FeedrunnerError,
  isRedisConnectionLoss,
  rootCauseFirst,
  serialiseError,
  withoutRepeats,
} from '../../src/config/errors.ts'
import { reviveError } from '../../src/config/stored-errors.ts'

// How the failure model reads a chain it did not build: bounds and codes behind foreign wrappers,
// ioredis's connection losses, values that are not errors, and what storing a chain keeps.

const bounded = (bound: string) => new FeedrunnerError('too big', { kind: 'bad_input', bound })
const codedError = (code: string) => new FeedrunnerError('refused', { kind: 'upstream', code })
const wrapped = (depth: number, inner: Error): Error => {
  let error = inner
  for (let index = 0; index < depth; index++) error = new Error(`wrap ${index}`, { cause: error })
  return error
}

describe('bounds and codes behind wrappers', () => {
  it('finds a bound behind a plain Error and behind a FeedrunnerError that has none', () => {
    expect(boundOf(new Error('while reading', { cause: bounded('PATH_MAX_VALUES') }))).toBe(
      'PATH_MAX_VALUES',
    )
    const unbounded = new FeedrunnerError('task parse', {
      kind: 'bad_input',
      cause: bounded('DECODE_MAX_NODES'),
    })
    expect(boundOf(unbounded)).toBe('DECODE_MAX_NODES')
    expect(boundOf(new Error('no bound here'))).toBeUndefined()
  })

  it('finds a code up to eight links deep, and not past them', () => {
    expect(errorCodeOf(wrapped(7, codedError('E_SEVEN')))).toBe('E_SEVEN')
    expect(errorCodeOf(wrapped(8, codedError('E_EIGHT')))).toBeUndefined()
    expect(errorCodeOf(new FeedrunnerError('no code', { kind: 'internal' }))).toBeUndefined()
  })
})

describe("ioredis's own connection losses", () => {
  it('reads its AbortError and its two no-connection messages as unavailable, exactly', () => {
    const losses = [
      new redisErrors.AbortError('Command aborted due to connection close'),
      new Error('Connection is closed.'),
      new Error("Stream isn't writeable and enableOfflineQueue options is false"),
    ]
    for (const loss of losses) {
      expect(isRedisConnectionLoss(loss)).toBe(true)
      expect(errorKindOf(new Error('while writing', { cause: loss }))).toBe('unavailable')
    }
    // Words that merely look alike belong to somebody else's failure.
    for (const other of ['Connection is closed', 'the bridge connection is closed.'])
      expect(errorKindOf(new Error(other))).toBe('internal')
  })
})

describe('values that are not errors', () => {
  it('reads a thrown string, null or a number as internal, and a plain object by its code', () => {
    expect(errorKindOf('ECONNREFUSED')).toBe('internal')
    expect(errorKindOf(null)).toBe('internal')
    expect(errorKindOf(42)).toBe('internal')
    expect(errorKindOf({ code: 'ECONNREFUSED' })).toBe('unavailable')
    expect(errorKindOf({ name: 'TimeoutError' })).toBe('timeout')
    // A code must be a string to be read: a number is an application's, not the network's.
    expect(errorKindOf({ code: 5 })).toBe('internal')
  })

  it('ends a chain at a null cause instead of saying "null"', () => {
    expect(rootCauseFirst(new Error('the feed service answered 500', { cause: null }))).toBe(
      'the feed service answered 500',
    )
  })
})

describe('own words of a wrapper', () => {
  it('unwraps own words that are parenthesised whole, and no others', () => {
    const cause = new Error('boom')
    expect(rootCauseFirst(new Error('fetch failed: boom (retry 2)', { cause }))).toBe(
      'boom; fetch failed: (retry 2)',
    )
    expect(rootCauseFirst(new Error('(retry 2) fetch boom', { cause }))).toBe(
      'boom; (retry 2) fetch',
    )
    expect(rootCauseFirst(new Error('(task fetch: boom)', { cause }))).toBe('boom; task fetch')
  })
})

describe('what storing a chain keeps', () => {
  it('adds no code or bound key where the error had none', () => {
    const stored = serialiseError(new Error('plain', { cause: new Error('root') }))
    for (const link of [stored, ...stored.causes]) {
      expect('code' in link).toBe(false)
      expect('bound' in link).toBe(false)
    }
  })

  it("keeps the outer link's own code and bound when a repeat of it has others", () => {
    const repeat = new FeedrunnerError('same words', {
      kind: 'upstream',
      code: 'INNER',
      bound: 'INNER_BOUND',
    })
    const outer = new FeedrunnerError('same words', {
      kind: 'upstream',
      code: 'OUTER',
      bound: 'OUTER_BOUND',
      cause: repeat,
    })
    const stored = withoutRepeats(serialiseError(outer))
    expect(stored.causes).toEqual([])
    expect(stored.code).toBe('OUTER')
    expect(stored.bound).toBe('OUTER_BOUND')
  })

  it('revives a FeedrunnerError given to it as the very same error', () => {
    const error = new FeedrunnerError('already ours', { kind: 'timeout', code: 'E_OURS' })
    expect(reviveError(error)).toBe(error)
  })
})
