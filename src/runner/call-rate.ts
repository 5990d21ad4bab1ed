import { randomUUID } from 'node:crypto'
import type { Redis } from 'ioredis'
import { luaScriptFile } from '../queue/lua-script.ts'

const TAKE_CALL = luaScriptFile(new URL('./call-rate.lua', import.meta.url), {
  keys: ['calls'],
  args: ['max_per_window', 'window_ms', 'call_id'],
})

const WINDOW_MS = 60_000

/** A call the runs endpoint refuses for its caller's rate: the words, and when to try again. */
export interface RateRefusal {
  message: string
  retryAfterSeconds: number
}

/**
 * Counts a call of `caller` against RUNS_API_MAX_CALLS_PER_MINUTE, each caller on its own (an
 * external initiator that floods its jobs does not use up the operator's calls, nor another's).
 * Decided before the body is read: a refused call costs no run and no body.
 */
export async function takeCall(
  redis: Redis,
  prefix: string,
  caller: string,
  maxPerMinute: number,
): Promise<RateRefusal | undefined> {
  const [refused, waitMs] = (await TAKE_CALL.run(
    redis,
    { calls: `${prefix}:calls:rate:${caller}` },
    { max_per_window: maxPerMinute, window_ms: WINDOW_MS, call_id: randomUUID() },
  )) as [number, number]
  if (refused === 0) return undefined
  const retryAfterSeconds = Math.ceil(waitMs / 1_000)
  return {
    message: `${caller === 'operator' ? 'the operator token' : `external initiator ${caller}`} made RUNS_API_MAX_CALLS_PER_MINUTE (${maxPerMinute}) calls in the last minute; try again in ${retryAfterSeconds} s, or raise the setting`,
    retryAfterSeconds,
  }
}
