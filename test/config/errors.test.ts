import { describe, expect, it } from 'vitest'
import {
  boundOf,
  ERROR_KINDS,
  errorKindOf,
  FeedrunnerError,
  isRetryable,
  reviveError,
  reviveErrorText,
  rootCauseFirst,
  serialiseError,
  serialisedErrorSchema,
  withContext,
} from '../../src/config/index.ts'

class NoMatchError extends FeedrunnerError {
  override readonly name = 'NoMatchError'
  constructor(readonly parameter: string) {
    super(`the feed service answered 404: no match on 2024-02-30 for parameter ${parameter}`, {
      kind: 'upstream',
    })
  }
}

/** A chain as the runner builds it: the upstream's answer, then the task, the job, the request. */
function fetchFailure(): FeedrunnerError {
  const root = new NoMatchError('date')
  return withContext(
    'request 0x4f1c',
    withContext('job datafeed game-odds', withContext('task fetch', root)),
  )
}

describe('FeedrunnerError', () => {
  it('carries a kind, a retryable flag defaulted by kind, and the standard cause', () => {
    const cause = new Error('socket closed')
    const error = new FeedrunnerError('the adapter did not answer', { kind: 'unavailable', cause })
    expect(error).toBeInstanceOf(Error)
    expect(error.kind).toBe('unavailable')
    expect(error.retryable).toBe(true)
    expect(error.cause).toBe(cause)
    expect(new FeedrunnerError('late', { kind: 'timeout' }).retryable).toBe(true)
    expect(new FeedrunnerError('bad date', { kind: 'bad_input' }).retryable).toBe(false)
    expect(new FeedrunnerError('503', { kind: 'upstream', retryable: true }).retryable).toBe(true)
    expect(new NoMatchError('date').name).toBe('NoMatchError')
  })

  it('kinds are a closed list', () => {
    expect(ERROR_KINDS).toEqual([
      'bad_input',
      'config',
      'upstream',
      'timeout',
      'node_refused',
      'reverted',
      'not_authorised',
      'unavailable',
      'internal',
    ])
  })
})

describe('errorKindOf and isRetryable', () => {
  it('read the kind, never the words', () => {
    const saysTimedOut = new FeedrunnerError('the feed service timed out (it says so itself)', {
      kind: 'upstream',
    })
    expect(errorKindOf(saysTimedOut)).toBe('upstream')
    expect(isRetryable(saysTimedOut)).toBe(false)
    expect(errorKindOf(new Error('timed out after 30000 ms'))).toBe('internal')
    expect(isRetryable(new Error('ECONNREFUSED'))).toBe(false)
  })

  it('read foreign errors by their network code, also behind a cause', () => {
    const refused = Object.assign(new Error('connect failed'), { code: 'ECONNREFUSED' })
    expect(errorKindOf(refused)).toBe('unavailable')
    expect(isRetryable(refused)).toBe(true)
    expect(errorKindOf(new TypeError('fetch failed', { cause: refused }))).toBe('unavailable')
    const aborted = new DOMException('The operation was aborted due to timeout', 'TimeoutError')
    expect(errorKindOf(aborted)).toBe('timeout')
    expect(errorKindOf('a string')).toBe('internal')
    expect(errorKindOf(undefined)).toBe('internal')
  })

  it('withContext keeps the kind and retryable flag of what it wraps', () => {
    const inner = new FeedrunnerError('503 from upstream', { kind: 'upstream', retryable: true })
    const outer = withContext('task fetch', inner)
    expect(outer.kind).toBe('upstream')
    expect(outer.retryable).toBe(true)
    expect(outer.cause).toBe(inner)
    expect(errorKindOf(new Error('wrapper', { cause: inner }))).toBe('upstream')
  })
})

describe('rootCauseFirst', () => {
  it('says what failed at the bottom, then where, nearest place first', () => {
    expect(rootCauseFirst(fetchFailure())).toBe(
      'the feed service answered 404: no match on 2024-02-30 for parameter date; task fetch, job datafeed game-odds, request 0x4f1c',
    )
  })

  it("drops a wrapper's copy of its cause's words", () => {
    const root = new FeedrunnerError('path x: no value at "x"', { kind: 'bad_input' })
    const task = new FeedrunnerError(`input from bad failed: ${root.message}`, {
      kind: 'bad_input',
      cause: root,
    })
    expect(rootCauseFirst(withContext('task parse', task))).toBe(
      'path x: no value at "x"; input from bad failed, task parse',
    )
  })

  it('renders a lone error, a plain Error and a string as their message', () => {
    expect(rootCauseFirst(new FeedrunnerError('alone', { kind: 'internal' }))).toBe('alone')
    expect(rootCauseFirst(new Error('outer', { cause: new Error('inner') }))).toBe('inner; outer')
    expect(rootCauseFirst('just text')).toBe('just text')
  })

  it('stops at a cycle', () => {
    const a = new Error('a')
    const b = new Error('b', { cause: a })
    Object.defineProperty(a, 'cause', { value: b })
    expect(rootCauseFirst(b)).toBe('a; b')
  })
})

describe('serialiseError and reviveError', () => {
  it('round-trip through JSON as the same kinds, flags and messages', () => {
    const stored = serialiseError(fetchFailure())
    expect(stored).toEqual({
      kind: 'upstream',
      message: 'request 0x4f1c',
      retryable: false,
      causes: [
        { kind: 'upstream', message: 'job datafeed game-odds', retryable: false },
        { kind: 'upstream', message: 'task fetch', retryable: false },
        {
          kind: 'upstream',
          message: 'the feed service answered 404: no match on 2024-02-30 for parameter date',
          retryable: false,
        },
      ],
    })
    const revived = reviveError(serialisedErrorSchema.parse(JSON.parse(JSON.stringify(stored))))
    expect(revived).toBeInstanceOf(FeedrunnerError)
    expect(revived.kind).toBe('upstream')
    expect(rootCauseFirst(revived)).toBe(rootCauseFirst(fetchFailure()))
    expect(serialiseError(revived)).toEqual(stored)
  })

  it('say a repeated cause once and keep the bound and code only it carried', () => {
    const budget = new FeedrunnerError('path $..* passed 100000 values', {
      kind: 'bad_input',
      code: 'OVER_BUDGET',
      bound: 'PATH_MAX_VALUES',
    })
    const task = new FeedrunnerError(budget.message, { kind: 'bad_input', cause: budget })
    const stored = serialiseError(task)
    expect(stored.causes).toEqual([])
    expect(stored).toMatchObject({ code: 'OVER_BUDGET', bound: 'PATH_MAX_VALUES' })
    expect(boundOf(reviveError(stored))).toBe('PATH_MAX_VALUES')
  })

  it('keep a retryable timeout retryable, and a foreign error internal', () => {
    const revived = reviveErrorText(
      JSON.stringify(serialiseError(new FeedrunnerError('late', { kind: 'timeout' }))),
    )
    expect(revived.kind).toBe('timeout')
    expect(isRetryable(revived)).toBe(true)
    expect(serialiseError(new Error('boom'))).toEqual({
      kind: 'internal',
      message: 'boom',
      retryable: false,
      causes: [],
    })
  })

  it('revive what is not a stored error as internal, its text the message', () => {
    const old = reviveErrorText('timed out after 30000 ms')
    expect(old.kind).toBe('internal')
    expect(old.message).toBe('timed out after 30000 ms')
    expect(reviveError({ kind: 'no_such_kind', message: 'x', retryable: true }).kind).toBe(
      'internal',
    )
  })

  it("keeps an error's code through storage, where it has one, and adds none where it has not", () => {
    const refused = new FeedrunnerError('the requester has too many runs in progress', {
      kind: 'not_authorised',
      code: 'requester_busy',
      cause: new FeedrunnerError('lease held', { kind: 'unavailable', code: 'held' }),
    })
    const stored = serialiseError(refused)
    expect(stored.code).toBe('requester_busy')
    expect(stored.causes[0]?.code).toBe('held')
    const revived = reviveError(JSON.parse(JSON.stringify(stored)))
    expect(revived.code).toBe('requester_busy')
    expect((revived.cause as FeedrunnerError).code).toBe('held')
    expect('code' in serialiseError(new FeedrunnerError('x', { kind: 'internal' }))).toBe(false)
  })
})
