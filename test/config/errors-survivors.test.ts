import { describe, expect, it } from 'vitest'
import {
  errorCodeOf,
  errorKindOf,
  FeedrunnerError,
  isRetryable,
  rootCauseFirst,
  serialiseError,
  withoutRepeats,
} from '../../src/config/errors.ts'

// What the mutation run of src/config left alive in the failure model: an error's own properties,
// where a code is read from, values that are not objects, and the words a wrapper keeps.

const say = (outer: string, inner: string) =>
  rootCauseFirst(new Error(outer, { cause: new Error(inner) }))

describe('an error built without a cause', () => {
  it('has no cause property, as a standard Error built without one has none', () => {
    const plain = new FeedrunnerError('the adapter did not answer', { kind: 'unavailable' })
    expect('cause' in plain).toBe(false)
    const caused = new FeedrunnerError('task fetch', { kind: 'unavailable', cause: plain })
    expect(Object.hasOwn(caused, 'cause')).toBe(true)
  })
})

describe('errorCodeOf', () => {
  it('reads past one of our errors that has no code, to the code of its cause', () => {
    const refused = new FeedrunnerError('lease held', { kind: 'unavailable', code: 'held' })
    const task = new FeedrunnerError('task fetch', { kind: 'unavailable', cause: refused })
    expect(errorCodeOf(task)).toBe('held')
    expect(errorCodeOf(new FeedrunnerError('job x', { kind: 'unavailable', cause: task }))).toBe(
      'held',
    )
  })

  it("never takes a foreign error's code (a socket's ECONNREFUSED) for one of ours", () => {
    const socket = Object.assign(new Error('connect failed'), { code: 'ECONNREFUSED' })
    expect(errorCodeOf(socket)).toBeUndefined()
    expect(errorCodeOf(new Error('fetch failed', { cause: socket }))).toBeUndefined()
    const ours = new FeedrunnerError('refused', { kind: 'upstream', code: 'E_OURS' })
    expect(errorCodeOf(Object.assign(new Error('outer', { cause: ours }), { code: 'EPIPE' }))).toBe(
      'E_OURS',
    )
  })
})

describe('a thrown value that is not an object', () => {
  it('is internal, whatever name or code a function thrown as an error carries', () => {
    function TimeoutError(): void {}
    expect(errorKindOf(TimeoutError)).toBe('internal')
    const coded = Object.assign(() => undefined, { code: 'ECONNREFUSED' })
    expect(errorKindOf(coded)).toBe('internal')
    expect(isRetryable(coded)).toBe(false)
    expect(errorKindOf(Object.assign(() => undefined, { code: 'ETIMEDOUT' }))).toBe('internal')
    expect(errorKindOf(new Error('fetch failed', { cause: coded }))).toBe('internal')
    // The same code on an object is read.
    expect(errorKindOf({ code: 'ECONNREFUSED' })).toBe('unavailable')
  })

  it('a rejection with undefined or null says nothing, not words of its own', () => {
    expect(rootCauseFirst(undefined)).toBe('')
    expect(rootCauseFirst(null)).toBe('')
  })
})

describe("a wrapper's own words", () => {
  it('are kept whole, separators and all, when its cause says something else or nothing', () => {
    expect(say('task fetch:', 'boom')).toBe('boom; task fetch:')
    expect(say('(task fetch) -', 'boom')).toBe('boom; (task fetch) -')
    expect(say('task fetch:', '')).toBe('; task fetch:')
    expect(say('- task fetch,', '')).toBe('; - task fetch,')
  })

  it("keep the words on either side of the cause's apart", () => {
    expect(say('[task fetch]boom[retry 2]', 'boom')).toBe('boom; [task fetch] [retry 2]')
    expect(say('retry(boom)later', 'boom')).toBe('boom; retry later')
  })

  it('drop parentheses left empty, with the spaces inside them', () => {
    expect(say('task fetch ( boom )', 'boom')).toBe('boom; task fetch')
    expect(say('task fetch (  boom  ) retried', 'boom')).toBe('boom; task fetch retried')
  })

  it('drop every separator the cause leaves in front of them, not just the first', () => {
    expect(say('boom -- task fetch', 'boom')).toBe('boom; task fetch')
    expect(say('boom): task fetch', 'boom')).toBe('boom; task fetch')
  })
})

describe('a link said twice, stored once', () => {
  it('gains no code or bound key that neither link had', () => {
    const repeat = new FeedrunnerError('same words', { kind: 'upstream' })
    const outer = new FeedrunnerError('same words', { kind: 'upstream', cause: repeat })
    const stored = serialiseError(outer)
    expect(stored).toStrictEqual({
      kind: 'upstream',
      message: 'same words',
      retryable: false,
      causes: [],
    })
    expect('code' in stored).toBe(false)
    expect('bound' in stored).toBe(false)
    const old = withoutRepeats({
      kind: 'upstream',
      message: 'same words',
      retryable: false,
      causes: [{ kind: 'upstream', message: 'same words', retryable: false }],
    })
    expect(Object.keys(old).sort()).toEqual(['causes', 'kind', 'message', 'retryable'])
  })
})
