import { randomUUID } from 'node:crypto'
import { hostname } from 'node:os'
import type { Redis } from 'ioredis'
import { FeedrunnerError } from '../config/errors.ts'
import { endpointOf } from '../config/settings.ts'
import { luaScriptFile } from '../queue/lua-script.ts'
import { processAlive } from './state.ts'

/**
 * A dev stack owns its queue prefix on the Redis it was given: two stacks on one Redis under one
 * prefix mixed their run records and queues (the second one's request was never fulfilled, its
 * `runs show` showed the first stack's run), and a fresh stack clears its prefix at start, which
 * would have wiped the other's. The claim is a key under the prefix that expires by Redis's clock
 * unless its stack renews it, so a stack that was killed frees the prefix within LEASE_MS.
 */

const LEASE_MS = 15_000
const RENEW_EVERY_MS = 5_000

const RENEW = luaScriptFile(new URL('./prefix-claim-renew.lua', import.meta.url), {
  keys: ['claim'],
  args: ['owner', 'lease_ms'],
})
const RELEASE = luaScriptFile(new URL('./prefix-claim-release.lua', import.meta.url), {
  keys: ['claim'],
  args: ['owner'],
})
const TAKE_OVER = luaScriptFile(new URL('./prefix-claim-take-over.lua', import.meta.url), {
  keys: ['claim'],
  args: ['dead_owner', 'owner', 'lease_ms'],
})

/** Who holds a prefix: what the refusal of a second stack names. */
interface Owner {
  pid: number
  host: string
  checkout: string
  since: string
  token: string
}

/** The claim's key: a stack clearing its prefix at start keeps it. */
export function claimKey(prefix: string): string {
  return `${prefix}:dev-stack`
}

export interface PrefixClaim {
  release(): Promise<void>
}

/** Claims `prefix` for this stack, or throws naming the stack that holds it and what to do. */
export async function claimPrefix(
  redis: Redis,
  prefix: string,
  checkout: string,
  redisUrl: string,
  onLost: () => void = () => undefined,
): Promise<PrefixClaim> {
  const key = claimKey(prefix)
  const owner: Owner = {
    pid: process.pid,
    host: hostname(),
    checkout,
    since: new Date().toISOString(),
    token: randomUUID(),
  }
  const value = JSON.stringify(owner)
  const taken = await redis.set(key, value, 'PX', LEASE_MS, 'NX')
  if (taken !== 'OK' && !(await takeOverFromDead(redis, key, value))) {
    const holder = parseOwner(await redis.get(key))
    throw new FeedrunnerError(
      `queue prefix ${prefix} on REDIS_URL ${endpointOf(redisUrl)} belongs to another dev stack${holder ? ` (pid ${holder.pid} on ${holder.host}, checkout ${holder.checkout}, since ${holder.since})` : ''}: give this one a QUEUE_PREFIX of its own, or unset REDIS_URL so it starts a Redis of its own`,
      { kind: 'config' },
    )
  }
  const timer = setInterval(() => {
    void RENEW.run(redis, { claim: key }, { owner: value, lease_ms: LEASE_MS })
      .then((renewed) => {
        // Lost (it expired while Redis or this process stood still, and another stack took it): said
        // once; the stack goes on, its records no longer its own alone. A claim Redis lost with
        // everything else (a FLUSHALL) is simply taken again: nobody else holds the prefix.
        if (renewed !== 0) return
        clearInterval(timer)
        onLost()
      })
      .catch(() => undefined) // Redis away: its connection reports the outage
  }, RENEW_EVERY_MS)
  timer.unref()
  return {
    async release() {
      clearInterval(timer)
      await RELEASE.run(redis, { claim: key }, { owner: value }).catch(() => undefined)
    },
  }
}

/**
 * A claim left by a stack of this host whose process is gone (killed before its claim expired) is
 * taken over at once, instead of refusing a restart for the rest of the claim's lease.
 */
async function takeOverFromDead(redis: Redis, key: string, value: string): Promise<boolean> {
  const stored = await redis.get(key)
  const holder = parseOwner(stored)
  if (!holder || holder.host !== hostname() || processAlive(holder.pid)) return false
  return (
    (await TAKE_OVER.run(
      redis,
      { claim: key },
      { dead_owner: stored as string, owner: value, lease_ms: LEASE_MS },
    )) === 'OK'
  )
}

function parseOwner(stored: string | null): Owner | undefined {
  if (stored === null) return undefined
  try {
    return JSON.parse(stored) as Owner
  } catch {
    return undefined
  }
}
