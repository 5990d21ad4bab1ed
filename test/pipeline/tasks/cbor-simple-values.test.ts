import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { runTask, failureOf as failure } from '../support/task.ts'

/**
 * Smaller strangers: a CBOR simple value a request cannot mean (255 was cbor-x's "No packed values
 * available"), and a uint256 past 2^256 - 1, which a node wraps and feedrunner refuses: the
 * conformance table says both.
 */
/** A diet request body `{"x": <item>}`: text key "x", then the item's bytes. */
const withItem = (item: string) => `0x6178${item}`

describe('cborparse: simple values', () => {
  it('refuses simple value 255 with its byte and the reason', async () => {
    const error = await failure(runTask('cborparse', { data: withItem('f8ff') }))
    expect(error.message).toBe(
      'data uses CBOR simple value 255 at byte 2: a Chainlink request carries no simple value but false, true, null and undefined',
    )
    expect(error.kind).toBe('bad_input')
    expect(error.retryable).toBe(false)
  })

  it('refuses every unassigned simple value, one byte or two', async () => {
    for (const [item, value] of [
      ['e0', 0],
      ['f3', 19],
      ['f820', 32],
      ['f810', 16],
    ] as const)
      expect((await failure(runTask('cborparse', { data: withItem(item) }))).message).toContain(
        `simple value ${value} at byte 2`,
      )
  })

  it('reads false, true, null and undefined as a node does', async () => {
    expect(await runTask('cborparse', { data: withItem('f4') })).toEqual({ x: false })
    expect(await runTask('cborparse', { data: withItem('f5') })).toEqual({ x: true })
    expect(await runTask('cborparse', { data: withItem('f6') })).toEqual({ x: null })
    expect(await runTask('cborparse', { data: withItem('f7') })).toEqual({ x: undefined })
  })
})

describe('ethabiencode: a uint256 past 2^256 - 1', () => {
  it('fails the task, and the conformance table says a node packs it modulo 2^256', async () => {
    const error = await failure(
      runTask('ethabiencode', {
        abi: '(uint256 value)',
        data: `{"value": "${(1n << 256n) + 5n}"}`,
      }),
    )
    expect(error.message).toContain(`data.value: ${(1n << 256n) + 5n} is out of range for uint256`)
    const doc = readFileSync(join(import.meta.dirname, '../../../docs/job-specs.md'), 'utf8')
    const row = doc.split('\n').find((line) => line.startsWith('| `ethabiencode` |'))
    expect(row).toContain('packs a wider one modulo 2^256: a `uint256` of 2^256 + 5 is sent as 5')
  })
})
