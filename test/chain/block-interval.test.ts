import { describe, expect, it } from 'vitest'
import { BlockInterval } from '../../src/chain/block-interval.ts'

describe('the chain pace from the heads seen', () => {
  const paceOf = (heads: Array<[number, number]>) => {
    const interval = new BlockInterval()
    for (const [number, timestamp] of heads) interval.observe({ number, timestamp })
    return interval.secondsPerBlock()
  }

  it('is unknown until two heads, then the seconds a block between them', () => {
    expect(paceOf([[10, 100]])).toBe(0)
    expect(
      paceOf([
        [10, 100],
        [13, 136],
      ]),
    ).toBe(12)
  })

  it('is not thrown by a clock jump (evm_increaseTime, a halted chain)', () => {
    expect(
      paceOf([
        [1, 100],
        [2, 102],
        [3, 404],
        [4, 406],
        [5, 408],
      ]),
    ).toBe(2)
  })

  it('follows a chain that changed its pace, and starts again from a lower head', () => {
    const heads: Array<[number, number]> = []
    for (let number = 0; number < 40; number++) heads.push([number, number * 12])
    for (let number = 40; number < 80; number++) heads.push([number, 480 + (number - 40) * 2])
    expect(paceOf(heads)).toBe(2)
    expect(
      paceOf([
        [5, 50],
        [6, 52],
        [4, 40],
        [5, 43],
      ]),
    ).toBe(2)
  })

  it('takes a chain that makes a block when a transaction comes for a fast one, quiet spells or not', () => {
    expect(
      paceOf([
        [1, 100],
        [2, 130],
        [3, 131],
        [4, 160],
        [5, 160],
      ]),
    ).toBe(0)
  })
})
