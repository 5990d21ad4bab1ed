import { describe, expect, it } from 'vitest'
import { DecodeBudgetError } from '../../../src/net/decode-budget.ts'
import { DEFAULT_PIPELINE_LIMITS } from '../../../src/pipeline/limits.ts'
import { TASK_TYPES, TaskError } from '../../../src/pipeline/index.ts'
import { runTask, failureOf as failure } from '../support/task.ts'

/**
 * cborparse at its edges: the mode a spec may write, standard mode (one whole item), the size bound,
 * the nesting bound, the node budget's error, and byte strings coming back as bytes.
 */
const check = (attributes: Record<string, string>) =>
  TASK_TYPES.get('cborparse')!.check!(attributes)

/** A diet body `{"x": h'00…'}` of exactly `total` bytes: key "x", then a byte string (0x59, two-byte length). */
function dietOfBytes(total: number): string {
  const length = total - 5
  return `0x617859${length.toString(16).padStart(4, '0')}${'00'.repeat(length)}`
}

/** `depth` arrays, one inside the other, around the integer 1, as one standard item. */
const nestedArrays = (depth: number) => `0x${'81'.repeat(depth)}01`

describe('cborparse: the mode written in the spec', () => {
  it('accepts no mode, an empty one, diet, standard (spaces around them too) and a variable', () => {
    for (const mode of [
      undefined,
      '',
      '   ',
      'diet',
      'standard',
      ' diet ',
      ' standard',
      '$(decode.mode)',
    ])
      expect(check(mode === undefined ? {} : { mode }), JSON.stringify(mode)).toEqual([])
  })

  it('refuses any other mode, naming it as written without its spaces', () => {
    expect(check({ mode: ' dietary ' })).toEqual([
      { attribute: 'mode', message: 'must be diet or standard, got "dietary"' },
    ])
    expect(check({ mode: 'Stryker was here!' })).toEqual([
      { attribute: 'mode', message: 'must be diet or standard, got "Stryker was here!"' },
    ])
    expect(check({ mode: 'x$(' })).toHaveLength(1)
    expect(check({ mode: 'STANDARD' })).toHaveLength(1)
  })
})

describe('cborparse: standard mode', () => {
  it('reads one complete item as it is, not wrapped in a map', async () => {
    expect(await runTask('cborparse', { data: '0x01', mode: 'standard' })).toBe(1)
    expect(await runTask('cborparse', { data: '0xa1617802', mode: 'standard' })).toEqual({ x: 2 })
    expect(await runTask('cborparse', { data: '0x820102', mode: 'standard' })).toEqual([1, 2])
  })

  it('gives null for no data, where diet mode gives an empty map', async () => {
    expect(await runTask('cborparse', { data: '0x', mode: 'standard' })).toBeNull()
    expect(await runTask('cborparse', { data: '0x' })).toEqual({})
    expect(await runTask('cborparse', { data: '0x', mode: 'diet' })).toEqual({})
  })

  it('refuses bytes after the item, with the decoder reason', async () => {
    const error = await failure(runTask('cborparse', { data: '0x0102', mode: 'standard' }))
    expect(error).toBeInstanceOf(TaskError)
    expect(error.message).toBe(
      'data is not valid CBOR (standard): Data read, but end of buffer not reached',
    )
    expect(error.kind).toBe('bad_input')
  })

  it('counts byte positions from the first byte of the data', async () => {
    expect((await failure(runTask('cborparse', { data: '0x1c', mode: 'standard' }))).message).toBe(
      'data is not valid CBOR (standard): reserved additional information 28 at byte 0',
    )
    expect(
      (await failure(runTask('cborparse', { data: '0x82011c', mode: 'standard' }))).message,
    ).toBe('data is not valid CBOR (standard): reserved additional information 28 at byte 2')
    expect((await failure(runTask('cborparse', { data: '0x61781c' }))).message).toBe(
      'data is not valid CBOR (diet): reserved additional information 28 at byte 2',
    )
  })
})

describe('cborparse: bounds', () => {
  it('reads 65536 bytes of data and refuses 65537, saying how many', async () => {
    const read = (await runTask('cborparse', { data: dietOfBytes(64 * 1024) })) as {
      x: Uint8Array
    }
    expect(read.x).toHaveLength(64 * 1024 - 5)
    const error = await failure(runTask('cborparse', { data: dietOfBytes(64 * 1024 + 1) }))
    expect(error).toBeInstanceOf(TaskError)
    expect(error.message).toBe('data is 65537 bytes, more than 65536')
    expect(error.kind).toBe('bad_input')
  })

  it('reads 32 levels of nesting and refuses 33', async () => {
    let expected: unknown = 1
    for (let level = 0; level < 32; level++) expected = [expected]
    expect(await runTask('cborparse', { data: nestedArrays(32), mode: 'standard' })).toEqual(
      expected,
    )
    const error = await failure(runTask('cborparse', { data: nestedArrays(33), mode: 'standard' }))
    expect(error.message).toBe('data nests deeper than 32 levels')
    expect(error.kind).toBe('bad_input')
  })

  it('counts the diet wrapper as a level, as maps nest too', async () => {
    const arrays = (depth: number) => `0x6178${'81'.repeat(depth)}01`
    expect(await runTask('cborparse', { data: arrays(31) })).toHaveProperty('x')
    expect((await failure(runTask('cborparse', { data: arrays(32) }))).message).toBe(
      'data nests deeper than 32 levels',
    )
    const maps = (depth: number) => `0x${'a16178'.repeat(depth)}01`
    expect(await runTask('cborparse', { data: maps(32), mode: 'standard' })).toHaveProperty('x.x')
    expect(
      (await failure(runTask('cborparse', { data: maps(33), mode: 'standard' }))).message,
    ).toBe('data nests deeper than 32 levels')
  })

  it("refuses more values than the run's DECODE_MAX_NODES, the budget error as its cause", async () => {
    const limits = { ...DEFAULT_PIPELINE_LIMITS, decodeMaxNodes: 2 }
    const error = await failure(
      runTask('cborparse', { data: '0x617883010203' }, { context: { limits } }),
    )
    expect(error).toBeInstanceOf(TaskError)
    expect(error.message).toBe(
      'data (CBOR, diet) would build more than 2 values (DECODE_MAX_NODES); it was refused before they were built',
    )
    expect(error.kind).toBe('bad_input')
    expect(error.cause).toBeInstanceOf(DecodeBudgetError)
    const standard = await failure(
      runTask('cborparse', { data: '0x83010203', mode: 'standard' }, { context: { limits } }),
    )
    expect(standard.message).toMatch(/^data \(CBOR, standard\) would build more than 2 values/)
  })
})

describe('cborparse: values', () => {
  it('gives byte strings as bytes, in a map or on their own', async () => {
    const inMap = (await runTask('cborparse', { data: '0x617843010203' })) as { x: unknown }
    expect(inMap.x).toBeInstanceOf(Uint8Array)
    expect([...(inMap.x as Uint8Array)]).toEqual([1, 2, 3])
    const alone = await runTask('cborparse', { data: '0x43010203', mode: 'standard' })
    expect(alone).toBeInstanceOf(Uint8Array)
    expect([...(alone as Uint8Array)]).toEqual([1, 2, 3])
  })

  it('names the data attribute when it is not bytes', async () => {
    const error = await failure(runTask('cborparse', { data: '$(n)' }, { vars: { n: 5 } }))
    expect(error.message).toBe('data: expected bytes or a 0x-hex string, got 5')
    expect(error.kind).toBe('bad_input')
  })

  it('reads a diet buffer that is a whole map already, and not the padding after it', async () => {
    expect(await runTask('cborparse', { data: '0xa161780100000000' })).toEqual({ x: 1 })
  })
})
