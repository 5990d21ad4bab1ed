import { describe, expect, it } from 'vitest'
import type { HeadHeader } from '../../src/chain/provider.ts'
import { RecentHeaders } from '../../src/chain/recent-headers.ts'

const ZERO_BLOOM = `0x${'0'.repeat(512)}`

/** A chain of headers `from`..`to`, each linked to the one before; `fork` names a branch's hashes. */
function chainOf(from: number, to: number, fork = 'a'): HeadHeader[] {
  const hashOf = (number: number) =>
    `0x${Buffer.from(`${fork}${number}`).toString('hex').padStart(64, '0')}`
  return Array.from({ length: to - from + 1 }, (_, at) => ({
    number: from + at,
    hash: hashOf(from + at),
    parentHash: hashOf(from + at - 1),
    logsBloom: ZERO_BLOOM,
  }))
}

/** The pure logic of the kept headers: linking down from a head, reorgs, what is forgotten. */
describe('RecentHeaders', () => {
  it('links down from the head to each kept header, and stops at a missing link', () => {
    const recent = new RecentHeaders()
    const headers = chainOf(10, 20)
    for (const header of headers) if (header.number !== 14) recent.note(header)
    const head = headers.at(-1)!
    expect(recent.canonicalHeader(head, 20)).toBe(head)
    expect(recent.canonicalHeader(head, 15)).toBe(headers[5])
    // Block 14 was never given: its hash is its child's parent hash, its header is not known.
    expect(recent.canonicalHeader(head, 14)).toBeUndefined()
    expect(recent.canonicalHash(head, 14)).toBe(headers[4]!.hash)
    // Below the missing link nothing links, though the headers are kept.
    expect(recent.canonicalHeader(head, 13)).toBeUndefined()
    expect(recent.canonicalHash(head, 13)).toBeUndefined()
    expect(recent.canonicalHeader(head, 21)).toBeUndefined()
    expect(recent.canonicalHeader(head, -1)).toBeUndefined()
  })

  it('answers nothing about a branch that was reorganised away', () => {
    const recent = new RecentHeaders()
    const old = chainOf(1, 10)
    for (const header of old) recent.note(header)
    // Blocks 8-10 replaced: 8 of branch b builds on 7 of a.
    const branch = chainOf(8, 10, 'b').map((header, at) =>
      at === 0 ? { ...header, parentHash: old[6]!.hash } : header,
    )
    for (const header of branch) recent.note(header)
    const newHead = branch.at(-1)!
    expect(recent.canonicalHeader(newHead, 9)).toBe(branch[1])
    expect(recent.canonicalHeader(newHead, 7)).toBe(old[6])
    // The old head no longer links down: its parent at 9 is now b's.
    expect(recent.canonicalHeader(old.at(-1)!, 8)).toBeUndefined()
  })

  it('forgets headers far below the newest, even one noted late', () => {
    const recent = new RecentHeaders(4)
    const headers = chainOf(0, 20)
    for (const header of headers.slice(10)) recent.note(header)
    // A checkpoint's old block read late sits last in the map's order.
    recent.note(headers[2]!)
    const head = headers.at(-1)!
    expect(recent.canonicalHeader(head, 17)).toBe(headers[17])
    expect(recent.canonicalHeader(head, 16)).toBe(headers[16])
    expect(recent.canonicalHeader(head, 12)).toBeUndefined()
  })

  it('knows the chain fills its blooms once a header with a bit set was given', () => {
    const recent = new RecentHeaders()
    const [first, second] = chainOf(1, 2)
    recent.note(first!)
    recent.note({ ...second!, logsBloom: undefined })
    expect(recent.bloomsFilled).toBe(false)
    recent.note({ ...second!, logsBloom: `0x${'0'.repeat(511)}1` })
    expect(recent.bloomsFilled).toBe(true)
  })
})
