import { describe as group, expect, it } from 'vitest'
import { Decimal } from '../../../src/reduce/index.ts'
import { runTask, taskFailure } from '../support/task.ts'

/**
 * Edges of the small tasks on text and bytes (base64, hexdecode, length), and of conditional,
 * lookup and fail: what each answers and the words of each refusal.
 */
const bytes = (text: string): Uint8Array => new TextEncoder().encode(text)

group('base64 edges', () => {
  it('skips line breaks in the text it decodes', async () => {
    expect(await runTask('base64decode', { input: 'aGVs\r\nbG8=' })).toEqual(bytes('hello'))
  })

  it('names input when it is neither text nor bytes', async () => {
    const decode = await taskFailure(runTask('base64decode', {}, { inputs: [5] }))
    expect(decode.message).toBe('input: expected a string, got 5')
    const encode = await taskFailure(runTask('base64encode', {}, { inputs: [5] }))
    expect(encode.message).toBe('input: expected a string, got 5')
  })
})

group('hexdecode edges', () => {
  it('wants 0x at the start, not anywhere', async () => {
    const error = await taskFailure(runTask('hexdecode', {}, { inputs: ['a0x12'] }))
    expect(error.message).toBe('hex string must have prefix 0x')
  })

  it('refuses an odd number of hex digits', async () => {
    const error = await taskFailure(runTask('hexdecode', {}, { inputs: ['0x123'] }))
    expect(error.message).toBe('failed to decode hex string "0x123"')
  })

  it('names input when it is neither text nor bytes', async () => {
    const error = await taskFailure(runTask('hexdecode', {}, { inputs: [5] }))
    expect(error.message).toBe('input: expected a string, got 5')
  })
})

group('length edges', () => {
  const count = async (input: unknown): Promise<string> =>
    ((await runTask('length', {}, { inputs: [input] })) as Decimal).toFixed()

  it('counts the elements of a JSON list written after spaces', async () => {
    expect(await count(' \n[1, 2]')).toBe('2')
  })

  it('reads null as no bytes', async () => {
    expect(await count(null)).toBe('0')
  })

  it('refuses a number or a map with the kinds it takes', async () => {
    const number = await taskFailure(runTask('length', {}, { inputs: [5] }))
    expect(number.message).toBe('input: expected a list, text or bytes, got 5')
    const map = await taskFailure(runTask('length', {}, { inputs: [{ a: 1 }] }))
    expect(map.message).toBe('input: expected a list, text or bytes, got an object')
  })
})

group('conditional edges', () => {
  it('passes on a true boolean and stops on a false one', async () => {
    expect(await runTask('conditional', {}, { inputs: [true] })).toBe(true)
    const error = await taskFailure(runTask('conditional', {}, { inputs: [false] }))
    expect(error.message).toBe('conditional was not satisfied')
  })

  it('stops on false text with the same words', async () => {
    const error = await taskFailure(runTask('conditional', {}, { inputs: ['false'] }))
    expect(error.message).toBe('conditional was not satisfied')
  })

  it('refuses what is neither true nor false, saying what it got', async () => {
    const text = await taskFailure(runTask('conditional', {}, { inputs: ['maybe'] }))
    expect(text.message).toBe('data: expected true or false, got "maybe"')
    const number = await taskFailure(runTask('conditional', {}, { inputs: [1] }))
    expect(number.message).toBe('data: expected true or false, got 1')
  })
})

group('lookup and fail without their attribute', () => {
  it('lookup without a key looks up the empty key', async () => {
    expect(await runTask('lookup', {}, { inputs: [{ '': 'blank', a: 1 }] })).toBe('blank')
  })

  it('fail without msg fails with no message', async () => {
    const error = await taskFailure(runTask('fail', {}))
    expect(error.message).toBe('')
  })
})
