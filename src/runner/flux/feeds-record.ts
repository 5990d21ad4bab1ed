import type { Redis } from 'ioredis'
import { z } from 'zod'
import type { FluxFeed } from './monitor-types.ts'

/**
 * What the flux monitor of a chain last saw of its feeds (latest answer and round, next heartbeat
 * or drumbeat),
 * for `feedrunner status` in another process. The process that looks (it owns a key of the node)
 * rewrites its chain's entry every REFRESH_MS; an entry lives ENTRY_TTL_MS, so one whose runners
 * stopped goes by itself. Names, addresses and numbers only.
 */

const REFRESH_MS = 5_000
const ENTRY_TTL_MS = 60_000

const fluxFeedsSchema = z.object({
  at: z.number(),
  feeds: z.array(
    z.object({
      job: z.string(),
      aggregator: z.string(),
      roundId: z.string().optional(),
      answer: z.string().optional(),
      updatedAt: z.number().optional(),
      nextHeartbeatAt: z.number().optional(),
      nextDrumbeatAt: z.number().optional(),
    }),
  ),
})
export type FluxFeeds = z.infer<typeof fluxFeedsSchema>

function entryKey(prefix: string, chainId: number): string {
  return `${prefix}:runner:flux-feeds:${chainId}`
}

/** The flux feeds of `chainId` as its monitor last wrote them, or undefined when none does. */
export async function readFluxFeeds(
  redis: Redis,
  prefix: string,
  chainId: number,
): Promise<FluxFeeds | undefined> {
  const stored = await redis.get(entryKey(prefix, chainId))
  if (stored === null) return undefined
  try {
    const parsed = fluxFeedsSchema.safeParse(JSON.parse(stored))
    return parsed.success ? parsed.data : undefined
  } catch {
    return undefined
  }
}

/**
 * Writes `feeds()` every REFRESH_MS while it has any (a process that does not look has none, and
 * leaves the entry to the one that does). A write that fails (Redis away) waits for the next;
 * Redis's outage is reported by its connection. Answers how to stop.
 */
export function publishFluxFeeds(
  redis: Redis,
  prefix: string,
  chainId: number,
  feeds: () => FluxFeed[],
): () => void {
  const timer = setInterval(() => {
    const now = feeds()
    if (now.length === 0) return
    const entry: FluxFeeds = { at: Date.now(), feeds: now }
    void redis
      .set(entryKey(prefix, chainId), JSON.stringify(entry), 'PX', ENTRY_TTL_MS)
      .catch(() => undefined)
  }, REFRESH_MS)
  timer.unref()
  return () => clearInterval(timer)
}
