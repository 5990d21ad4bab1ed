import { createHash } from 'node:crypto'
import type { Redis } from 'ioredis'

/** A Lua script run with EVALSHA; its text is sent only when Redis does not know it yet (NOSCRIPT). */
export interface LuaScript {
  run(redis: Redis, keys: readonly string[], args: ReadonlyArray<string | number>): Promise<unknown>
}

/**
 * Scripts run for every request (run updates, nonce allocations) send 40 bytes instead of their text,
 * and an auto-pipelining connection can batch them: a measurable part of the runner's writes.
 *
 * The first call on a connection sends the text (EVAL, which also stores the script in Redis); calls
 * made while it is out wait for it. Without the wait, a burst on a fresh Redis (a new runner, a flushed
 * or replaced instance) sent every call twice: an EVALSHA refused with NOSCRIPT, then the EVAL.
 */
export function luaScript(text: string): LuaScript {
  const sha = createHash('sha1').update(text).digest('hex')
  const stored = new WeakMap<Redis, Promise<void>>()
  const evalText = (redis: Redis, keys: readonly string[], args: ReadonlyArray<string | number>) =>
    redis.eval(text, keys.length, ...keys, ...args)
  return {
    async run(redis, keys, args) {
      const storing = stored.get(redis)
      if (storing === undefined) {
        const first = evalText(redis, keys, args)
        // Settled either way: a script error still stored it, and a lost one is caught by NOSCRIPT.
        stored.set(
          redis,
          first.then(
            () => undefined,
            () => undefined,
          ),
        )
        return first
      }
      await storing
      try {
        return await redis.evalsha(sha, keys.length, ...keys, ...args)
      } catch (error) {
        if (!(error instanceof Error) || !error.message.startsWith('NOSCRIPT')) throw error
        // Redis lost its scripts (replaced, SCRIPT FLUSH): the next call stores it again.
        stored.delete(redis)
        return evalText(redis, keys, args)
      }
    },
  }
}
