import fc from 'fast-check'
import { formatUnits } from 'ethers'
import { describe, expect, it } from 'vitest'
import { linkAmount } from '../../src/runner/run-advice.ts'

describe('linkAmount', () => {
  it('writes juels in LINK as ethers formatUnits(juels, 18) does', () => {
    for (const juels of [0n, 1n, 10n ** 17n, 10n ** 18n, 25n * 10n ** 17n, -(10n ** 18n) - 1n])
      expect(linkAmount(juels)).toBe(formatUnits(juels, 18))
    expect(linkAmount(10n ** 17n)).toBe('0.1')
    fc.assert(
      fc.property(fc.bigInt({ min: -(2n ** 96n), max: 2n ** 96n }), (juels) => {
        expect(linkAmount(juels)).toBe(formatUnits(juels, 18))
      }),
    )
  })
})
