import { createHash } from 'node:crypto'
import type { Redis } from 'ioredis'

/** A Lua script run with EVALSHA; its text is sent only when Redis does not know it yet (NOSCRIPT). */
export interface LuaScript {
  run(redis: Redis, keys: readonly string[], args: ReadonlyArray<string | number>): Promise<unknown>
}

/**
 * Scripts run for every request (run updates, nonce allocations) send 40 bytes instead of their text,
 * and an auto-pipelining connection can batch them: a measurable part of the runner's writes.
 */
export function luaScript(text: string): LuaScript {
  const sha = createHash('sha1').update(text).digest('hex')
  return {
    async run(redis, keys, args) {
      try {
        return await redis.evalsha(sha, keys.length, ...keys, ...args)
      } catch (error) {
        if (!(error instanceof Error) || !error.message.startsWith('NOSCRIPT')) throw error
        return redis.eval(text, keys.length, ...keys, ...args)
      }
    },
  }
}
