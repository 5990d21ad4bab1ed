import { Redis } from 'ioredis'
import { afterAll, describe, expect, it, vi } from 'vitest'
import { waitFor } from '../../src/dev/process.ts'
import { KeyLeases, ownerKey, type KeyOwner } from '../../src/chain/sender/ownership/key-leases.ts'
import { testRedisUrl, uniquePrefix } from '../support/redis.ts'

const KEYS = [
  '0x70997970C51812dc3A010C7d01b50e0d17dc79C8',
  '0x90F79bf6EB2c4f870365E785982E1f101E93b906',
]

/** A process's key senders as the leases see them: what they were told, and whether they are idle. */
function owner(): KeyOwner & { events: string[]; busy: Set<string> } {
  const events: string[] = []
  const busy = new Set<string>()
  return {
    events,
    busy,
    acquired: (address) => void events.push(`acquired ${address}`),
    lost: (address) => void events.push(`lost ${address}`),
    drain: (address, draining) => void (draining && events.push(`drain ${address}`)),
    idle: (address) => !busy.has(address),
  }
}

describe('sender key leases: one owner per key, by Redis time', () => {
  const redis = new Redis(testRedisUrl())
  const base = uniquePrefix('leases')
  const started: KeyLeases[] = []
  const leases = (process: string, hooks: KeyOwner, leaseMs = 60_000, at = base) => {
    const made = new KeyLeases(redis, { base: at, addresses: KEYS, leaseMs, process }, hooks)
    started.push(made)
    return made
  }

  afterAll(async () => {
    for (const made of started) await made.stop()
    const keys = await redis.keys(`${base}:*`)
    if (keys.length) await redis.del(...keys)
    redis.disconnect()
  })

  it('a lone process takes every key; a second one gets its share once the first lets an idle key go', async () => {
    const first = owner()
    const a = leases('a', first)
    await a.tick()
    expect([...a.owned.keys()]).toEqual(KEYS)
    // One key busy: it is drained, not let go, until idle.
    first.busy.add(KEYS[1]!)
    const second = owner()
    const b = leases('b', second)
    await b.tick()
    expect(b.owned.size).toBe(0)
    await a.tick()
    expect(first.events).toContain(`drain ${KEYS[1]}`)
    expect(a.owned.has(KEYS[1]!)).toBe(true)
    first.busy.clear()
    await a.tick()
    expect([...a.owned.keys()]).toEqual([KEYS[0]])
    await b.tick()
    expect([...b.owned.keys()]).toEqual([KEYS[1]])
    // Each fence is its own: the lease holds the owner's, never the other's.
    expect(await redis.get(ownerKey(base, KEYS[0]!))).toMatch(/^a:\d+$/)
    expect(await redis.get(ownerKey(base, KEYS[1]!))).toMatch(/^b:\d+$/)
    await a.stop()
    await b.stop()
    expect(await redis.exists(ownerKey(base, KEYS[0]!), ownerKey(base, KEYS[1]!))).toBe(0)
  })

  it('a lease not renewed runs out by Redis clock; another process takes the key; the first finds it lost and counts it', async () => {
    // Its own chain: the processes of the test before are still among the live senders there.
    const chainBase = `${base}:2`
    const slowHooks = owner()
    const slow = leases('slow', slowHooks, 300, chainBase)
    // Its host's clock runs an hour ahead while it takes the keys: a lease reckoned from that clock
    // would hold them for an hour after the process stopped; by Redis's clock it holds them 300 ms.
    const realNow = Date.now.bind(Date)
    const hostClock = vi.spyOn(Date, 'now').mockImplementation(() => realNow() + 3_600_000)
    try {
      await slow.tick()
    } finally {
      hostClock.mockRestore()
    }
    expect(slow.owned.size).toBe(2)
    expect(await redis.pttl(ownerKey(chainBase, KEYS[0]!))).toBeLessThanOrEqual(300)
    const fastHooks = owner()
    const fast = leases('fast', fastHooks, 300, chainBase)
    // `slow` does not renew (a process stalled, or dead): its leases expire in Redis.
    await waitFor(
      'the keys taken over',
      async () => {
        await fast.tick()
        return fast.owned.size === 2
      },
      10_000,
      50,
    )
    await slow.tick()
    expect(slow.owned.size).toBe(0)
    expect(slow.lostCount).toBe(2)
    expect(slowHooks.events.filter((event) => event.startsWith('lost'))).toHaveLength(2)
    // The new fences differ from the old: nothing the stalled process still holds can write.
    expect(await redis.get(ownerKey(chainBase, KEYS[0]!))).toMatch(/^fast:\d+$/)
  })
})
