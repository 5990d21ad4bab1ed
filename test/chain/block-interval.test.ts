import { describe, expect, it } from 'vitest'
import { BlockInterval } from '../../src/chain/block-interval.ts'

describe('the chain block time from the heads seen', () => {
  const paceOf = (heads: Array<[number, number]>) => {
    const interval = new BlockInterval()
    for (const [number, timestamp] of heads) interval.observe({ number, timestamp })
    return interval.secondsPerBlock()
  }
  /** `count` heads from block `from`, `seconds` apart. */
  const clocked = (count: number, seconds: number, from = 1, at = 1_000): Array<[number, number]> =>
    Array.from({ length: count }, (_, index) => [from + index, at + index * seconds])

  it('is unknown until nine heads, then the seconds a block', () => {
    expect(paceOf(clocked(8, 12))).toBe(0)
    expect(paceOf(clocked(9, 12))).toBe(12)
  })

  it('takes a missed slot for what it is, and a clock jump for no clock', () => {
    const missed = clocked(9, 12)
    missed.push([10, missed.at(-1)![1] + 24])
    expect(paceOf(missed)).toBe(12)
    const jumped = clocked(9, 2)
    jumped.push([10, jumped.at(-1)![1] + 300])
    expect(paceOf(jumped)).toBe(0)
  })

  it('follows a chain that changed its pace', () => {
    const last = clocked(40, 12).at(-1)!
    expect(paceOf([...clocked(40, 12), ...clocked(40, 2, last[0] + 1, last[1] + 2)])).toBe(2)
  })

  it('starts again from a lower head (a reorg)', () => {
    expect(paceOf([...clocked(9, 12, 10), ...clocked(8, 12, 5)])).toBe(0)
  })

  it('says nothing of a chain that makes a block when a transaction comes, quiet spells or not', () => {
    const steps = [30, 1, 29, 0, 45, 2, 60, 1, 33]
    let at = 100
    const heads: Array<[number, number]> = [[1, at]]
    steps.forEach((step, index) => heads.push([index + 2, (at += step)]))
    expect(paceOf(heads)).toBe(0)
    // Sparse, and never faster than 30 s: still no clock (no step is the block time of the others).
    expect(
      paceOf([
        [1, 0],
        [2, 30],
        [3, 95],
        [4, 130],
        [5, 250],
        [6, 290],
        [7, 330],
        [8, 400],
        [9, 460],
      ]),
    ).toBe(0)
  })
})
