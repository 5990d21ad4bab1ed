import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { Redis } from 'ioredis'
import { afterAll, describe, expect, it } from 'vitest'
import { startOwnedProcess, waitFor, type OwnedProcess } from '../../src/dev/process.ts'
import { KeyLeases, ownerKey, type KeyOwner } from '../../src/chain/sender/ownership/key-leases.ts'
import { LIBFAKETIME } from '../reliability/support.ts'
import { testRedisUrl, uniquePrefix } from '../support/redis.ts'

const KEYS = [
  '0x70997970C51812dc3A010C7d01b50e0d17dc79C8',
  '0x90F79bf6EB2c4f870365E785982E1f101E93b906',
]

/** The lease of the process whose clock is off: renewed every ~0.7 s, so load does not lose it. */
const HOLDER_LEASE_MS = 2_000

/** What the lease holder (fixtures/lease-holder.ts) prints after each tick. */
interface HolderLine {
  owned: string[]
  lost: string[]
  lostCount: number
  hostNow: number
}

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
  const holders: OwnedProcess[] = []
  const leases = (process: string, hooks: KeyOwner, leaseMs = 60_000, at = base) => {
    const made = new KeyLeases(redis, { base: at, addresses: KEYS, leaseMs, process }, hooks)
    started.push(made)
    return made
  }

  afterAll(async () => {
    for (const holder of holders) await holder.stop('SIGKILL')
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

  it('a lease not renewed runs out by Redis clock, its holder 300 s ahead; another process takes the key; the first finds it lost and counts it', async () => {
    if (!existsSync(LIBFAKETIME))
      throw new Error(`${LIBFAKETIME} is missing: apt-get install faketime (.ci/run does this)`)
    // Its own chain: the processes of the test before are still among the live senders there.
    const chainBase = `${base}:2`
    // The holder's host clock is 300 s ahead of this one's and Redis's: a lease it timed by its own
    // clock would still look valid here for 5 minutes. With the leases and the heartbeat timed by
    // Date.now() (passed to the scripts in place of Redis's TIME and PX) the takeover below timed out.
    const holder = startOwnedProcess(
      'lease-holder',
      process.execPath,
      ['--import', 'tsx', join(import.meta.dirname, 'fixtures/lease-holder.ts')],
      {
        env: {
          ...process.env,
          LD_PRELOAD: LIBFAKETIME,
          FAKETIME: '+300s',
          FAKETIME_DONT_FAKE_MONOTONIC: '1',
          REDIS_URL: testRedisUrl(),
          BASE: chainBase,
          ADDRESSES: KEYS.join(','),
          LEASE_MS: String(HOLDER_LEASE_MS),
          PROCESS: 'slow',
        },
      },
    )
    holders.push(holder)
    const last = () => {
      const lines = holder
        .output()
        .trim()
        .split('\n')
        .filter((line) => line.startsWith('{'))
      return lines.length === 0 ? undefined : (JSON.parse(lines.at(-1)!) as HolderLine)
    }
    await waitFor('the holder owning both keys', async () => last()?.owned.length === 2, 60_000)
    expect(Math.abs(last()!.hostNow - Date.now() - 300_000)).toBeLessThan(30_000)
    const held = await redis.get(ownerKey(chainBase, KEYS[0]!))
    expect(held).toMatch(/^slow:\d+$/)
    // The holder stalls (a process stopped by its host, a long pause): it renews nothing.
    holder.child.kill('SIGSTOP')
    const fastHooks = owner()
    const fast = leases('fast', fastHooks, HOLDER_LEASE_MS, chainBase)
    // The bound only catches a lease kept by the holder's clock (300 s): the lease is 2 s.
    await waitFor(
      'the keys taken over',
      async () => {
        await fast.tick()
        return fast.owned.size === 2
      },
      20_000,
      100,
    )
    // The new fences differ from the old: nothing the stalled process still holds can write.
    expect(await redis.get(ownerKey(chainBase, KEYS[0]!))).toMatch(/^fast:\d+$/)
    holder.child.kill('SIGCONT')
    await waitFor('the holder finding its leases lost', async () => (last()?.lostCount ?? 0) >= 2)
    expect(last()).toMatchObject({ lostCount: 2 })
    expect([...last()!.lost].sort()).toEqual([...KEYS].sort())
  }, 90_000)
})
