import { readFileSync } from 'node:fs'
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

/** A script kept in a `.lua` file, called with its keys and arguments by name. */
export interface NamedLuaScript<K extends string, A extends string> {
  run(
    redis: Redis,
    keys: Readonly<Record<K, string>>,
    args: Readonly<Record<A, string | number>>,
    /** Arguments after the named ones (a script that takes a list reads ARGV past its names). */
    rest?: ReadonlyArray<string | number>,
  ): Promise<unknown>
}

const NAMES_LINE = /^--\s*(keys|args):(.*)$/
const LUA_NAME = /^[a-z][a-z0-9_]*$/

/**
 * Loads a Lua script from a `.lua` file whose first lines name its keys and arguments, in order:
 *
 * ```lua
 * -- keys: owner counter
 * -- args: token next_nonce
 * ```
 *
 * The file's body reads them as locals (`owner_key`, `counter_key`, `token`, `next_nonce`), declared
 * by a prelude made here, so no script reads `KEYS[3]` or `ARGV[5]` by position, and a caller passes
 * `{ owner: ..., counter: ... }`. The names the caller declares must be the file's, in the file's order:
 * a mismatch fails at load, not at the first call.
 */
export function luaScriptFile<const K extends string, const A extends string>(
  file: URL,
  names: { keys: readonly K[]; args: readonly A[] },
): NamedLuaScript<K, A> {
  const body = readFileSync(file, 'utf8')
  const declared: Record<'keys' | 'args', string[]> = { keys: [], args: [] }
  for (const line of body.split('\n')) {
    const match = NAMES_LINE.exec(line.trim())
    if (!match) break
    declared[match[1] as 'keys' | 'args'] = match[2]!.trim().split(/\s+/).filter(Boolean)
  }
  for (const part of ['keys', 'args'] as const) {
    const given = names[part] as readonly string[]
    if (given.join(' ') !== declared[part].join(' ') || !given.every((n) => LUA_NAME.test(n)))
      throw new Error(
        `${file.pathname}: its "-- ${part}:" line names ${declared[part].join(' ') || 'nothing'}, the caller ${given.join(' ') || 'nothing'}`,
      )
  }
  const prelude = [
    ...names.keys.map((name, at) => `local ${name}_key = KEYS[${at + 1}]`),
    ...names.args.map((name, at) => `local ${name} = ARGV[${at + 1}]`),
  ].join('\n')
  const script = luaScript(`${prelude}\n${body}`)
  return {
    run: (redis, keys, args, rest = []) =>
      script.run(
        redis,
        names.keys.map((name) => keys[name]),
        [...names.args.map((name) => args[name]), ...rest],
      ),
  }
}
