import { describe, expect, it } from 'vitest'
import {
  boundOf,
  errorKindOf,
  FeedrunnerError,
  isRetryable,
  redisReplyCode,
  rootCauseFirst,
  serialiseError,
  withContext,
  withoutRepeats,
} from '../../src/config/errors.ts'
import { reviveError, reviveErrorText } from '../../src/config/stored-errors.ts'

// The edges of the failure model: every code it reads, each separator it strips, each bound.

const coded = (code: string) => Object.assign(new Error(`failed (${code})`), { code })

function replyError(message: string): Error {
  const error = new Error(message)
  error.name = 'ReplyError'
  return error
}

describe('foreign errors by their code', () => {
  it('reads every network code of Node and undici as unavailable or timeout', () => {
    for (const code of [
      'ECONNREFUSED',
      'ECONNRESET',
      'EPIPE',
      'ENOTFOUND',
      'EAI_AGAIN',
      'EHOSTUNREACH',
      'ENETUNREACH',
      'UND_ERR_SOCKET',
      'UND_ERR_CLOSED',
    ])
      expect(errorKindOf(coded(code)), code).toBe('unavailable')
    for (const code of [
      'ETIMEDOUT',
      'UND_ERR_CONNECT_TIMEOUT',
      'UND_ERR_HEADERS_TIMEOUT',
      'UND_ERR_BODY_TIMEOUT',
    ])
      expect(errorKindOf(coded(code)), code).toBe('timeout')
    expect(errorKindOf(coded('EACCES'))).toBe('internal')
    expect(errorKindOf({ code: 42 })).toBe('internal')
    expect(errorKindOf({ name: 'TimeoutError' })).toBe('timeout')
    expect(isRetryable(coded('ETIMEDOUT'))).toBe(true)
    expect(isRetryable(coded('EACCES'))).toBe(false)
  })

  it("reads Redis's not-now replies as unavailable, by their first word only", () => {
    for (const code of [
      'OOM',
      'READONLY',
      'LOADING',
      'BUSY',
      'MASTERDOWN',
      'CLUSTERDOWN',
      'TRYAGAIN',
      'NOREPLICAS',
    ])
      expect(errorKindOf(replyError(`${code} the server says why`)), code).toBe('unavailable')
    expect(errorKindOf(replyError('ERR unknown command'))).toBe('internal')
    expect(errorKindOf(replyError('the server says OOM'))).toBe('internal')
    // The same words from anything but a reply are not a reply.
    expect(errorKindOf(new Error('OOM command not allowed'))).toBe('internal')
  })

  it('finds the reply code in an error or behind its causes', () => {
    const reply = replyError('NOSCRIPT No matching script')
    expect(redisReplyCode(reply)).toBe('NOSCRIPT')
    expect(redisReplyCode(new Error('outer', { cause: reply }))).toBe('NOSCRIPT')
    expect(redisReplyCode(new Error('plain'))).toBeUndefined()
    expect(redisReplyCode(replyError('lower case reply'))).toBeUndefined()
    expect(redisReplyCode('OOM')).toBeUndefined()
  })

  it('takes the kind and flag of the first FeedrunnerError behind foreign wrappers', () => {
    const ours = new FeedrunnerError('busy', { kind: 'upstream', retryable: true })
    const wrapped = new Error('outer', { cause: new Error('middle', { cause: ours }) })
    expect(errorKindOf(wrapped)).toBe('upstream')
    expect(isRetryable(wrapped)).toBe(true)
    // A foreign code nearer the top wins over ours below it.
    expect(errorKindOf(Object.assign(new Error('x', { cause: ours }), { code: 'EPIPE' }))).toBe(
      'unavailable',
    )
  })
})

describe('chains', () => {
  it('reads at most 20 links, so a chain longer than that is cut, not walked', () => {
    let error: Error = new FeedrunnerError('root', { kind: 'timeout', bound: 'DEEP' })
    for (let depth = 0; depth < 25; depth++) error = new Error(`wrap ${depth}`, { cause: error })
    expect(errorKindOf(error)).toBe('internal')
    expect(serialiseError(error).causes).toHaveLength(19)
    // boundOf walks the whole chain.
    expect(boundOf(error)).toBe('DEEP')
    expect(boundOf(new Error('none'))).toBeUndefined()
    expect(boundOf('text')).toBeUndefined()
  })

  it('keeps a bound only where one was given', () => {
    expect(new FeedrunnerError('x', { kind: 'internal' }).bound).toBeUndefined()
    expect(new FeedrunnerError('x', { kind: 'internal', bound: 'B' }).bound).toBe('B')
    expect(new FeedrunnerError('x', { kind: 'internal' }).cause).toBeUndefined()
    expect(new FeedrunnerError('x', { kind: 'internal' }).name).toBe('FeedrunnerError')
    expect(new FeedrunnerError('x', { kind: 'internal', retryable: false }).retryable).toBe(false)
  })

  it('strips the separators a wrapper puts around its cause', () => {
    const say = (outer: string, inner: string) =>
      rootCauseFirst(new Error(outer, { cause: new Error(inner) }))
    expect(say('task fetch: boom', 'boom')).toBe('boom; task fetch')
    expect(say('task fetch (boom)', 'boom')).toBe('boom; task fetch')
    expect(say('boom - in task fetch', 'boom')).toBe('boom; in task fetch')
    expect(say('(task fetch) boom', 'boom')).toBe('boom; task fetch')
    expect(say('task  fetch,  boom  again', 'boom')).toBe('boom; task fetch, again')
    expect(say('boom', 'boom')).toBe('boom')
    expect(say('  task fetch  ', '')).toBe('; task fetch')
    expect(say('task fetch', 'other')).toBe('other; task fetch')
    expect(rootCauseFirst(new Error(''))).toBe('')
    expect(rootCauseFirst(42)).toBe('42')
  })
})

describe('stored errors', () => {
  it('says a repeated link once in old records too, keeping a code only the repeat had', () => {
    const stored = {
      kind: 'upstream' as const,
      message: 'same',
      retryable: false,
      causes: [
        { kind: 'upstream' as const, message: 'same', retryable: false, code: 'C', bound: 'B' },
        { kind: 'upstream' as const, message: 'root', retryable: false, code: 'R' },
      ],
    }
    expect(withoutRepeats(stored)).toEqual({
      kind: 'upstream',
      message: 'same',
      retryable: false,
      code: 'C',
      bound: 'B',
      causes: [{ kind: 'upstream', message: 'root', retryable: false, code: 'R' }],
    })
    const own = { ...stored, code: 'TOP', bound: 'TOPB' }
    expect(withoutRepeats(own)).toMatchObject({ code: 'TOP', bound: 'TOPB' })
  })

  it('reads a record whose causes Lua wrote as {} as one without causes', () => {
    const revived = reviveError({ kind: 'timeout', message: 'late', retryable: true, causes: {} })
    expect([revived.kind, revived.message, revived.retryable, revived.cause]).toEqual([
      'timeout',
      'late',
      true,
      undefined,
    ])
  })

  it('revives the chain in order, and what is not a record as internal', () => {
    const stored = serialiseError(
      withContext('outer', new FeedrunnerError('inner', { kind: 'reverted' })),
    )
    const revived = reviveError(stored)
    expect(revived.message).toBe('outer')
    expect((revived.cause as FeedrunnerError).message).toBe('inner')
    expect((revived.cause as FeedrunnerError).kind).toBe('reverted')
    expect(reviveError({ some: 'thing' }).message).toBe('{"some":"thing"}')
    expect(reviveErrorText('{"kind":"config","message":"m","retryable":false}').kind).toBe('config')
    expect(reviveErrorText('{not json').message).toBe('{not json')
    expect(serialiseError('text')).toEqual({
      kind: 'internal',
      message: 'text',
      retryable: false,
      causes: [],
    })
    expect(serialiseError({ toString: () => 'obj' }).message).toBe('obj')
  })
})
