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

  it('times the next block by the chain clock and the earliest sighting, not by the last sighting', () => {
    const interval = new BlockInterval()
    // 2 s blocks, each first seen 100 to 900 ms after its chain time (a poller's lateness varies).
    const lateness = [900, 300, 700, 100, 500, 800, 400, 600, 200, 900]
    lateness.forEach((late, index) =>
      interval.observe(
        { number: index + 1, timestamp: 1_000 + 2 * index },
        5e6 + 2_000 * index + late,
      ),
    )
    // The last head (block 10, chain time 1_018) was seen 900 ms late; its successor is due at its
    // chain time plus the least lateness, 100 ms, on the same clock: not 900 ms later.
    expect(interval.nextBlockSeenFrom()).toBe(5e6 + 2_000 * 10 + 100)
    expect(new BlockInterval().nextBlockSeenFrom()).toBeUndefined()
    const unseen = new BlockInterval()
    clocked(9, 12).forEach(([number, timestamp]) => unseen.observe({ number, timestamp }))
    expect(unseen.nextBlockSeenFrom()).toBeUndefined()
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
