import fc from 'fast-check'
import { getAddress, hexlify, keccak256 } from 'ethers'
import { describe, expect, it } from 'vitest'
import { useWasmKeccak } from '../../src/chain/keccak.ts'

describe('useWasmKeccak', () => {
  it('gives the hashes ethers gave before, for any input, and checksummed addresses stay the same', async () => {
    const inputs = fc.sample(fc.uint8Array({ maxLength: 1_000 }), 300)
    const addresses = fc.sample(
      fc.uint8Array({ minLength: 20, maxLength: 20 }).map((bytes) => hexlify(bytes)),
      100,
    )
    const before = inputs.map((bytes) => keccak256(bytes))
    const checksummed = addresses.map((address) => getAddress(address))
    await useWasmKeccak()
    await useWasmKeccak()
    expect(inputs.map((bytes) => keccak256(bytes))).toEqual(before)
    expect(addresses.map((address) => getAddress(address))).toEqual(checksummed)
    // Known answers: the empty input, and Keccak (not SHA3) of "abc".
    expect(keccak256(new Uint8Array())).toBe(
      '0xc5d2460186f7233c927e7db2dcc703c0e500b653ca82273b7bfad8045d85a470',
    )
    expect(keccak256(new TextEncoder().encode('abc'))).toBe(
      '0x4e03657aea45a94fc7d47ba826c8d667c0d1e6e33a64a036ec44f58fa12d6c45',
    )
  })
})
