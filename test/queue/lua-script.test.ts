import { createHash } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Redis } from 'ioredis'
import { startPrivateRedis, type PrivateRedis } from '../../src/dev/redis.ts'
import { createRedisConnection } from '../../src/queue/connection.ts'
import { luaScript } from '../../src/queue/lua-script.ts'
import { untilReady } from '../support/redis.ts'

/** Calls of each command Redis ran, from INFO commandstats. */
async function commandCalls(redis: Redis): Promise<Record<string, number>> {
  const info = await redis.info('commandstats')
  const calls: Record<string, number> = {}
  for (const match of info.matchAll(/^cmdstat_(\w+):calls=(\d+)/gm))
    calls[match[1] as string] = Number(match[2])
  return calls
}

describe('a Lua script run in a burst', () => {
  let server: PrivateRedis
  let redis: Redis

  beforeAll(async () => {
    server = await startPrivateRedis()
    redis = createRedisConnection(server.url, 'client')
    await untilReady(redis)
  })

  afterAll(async () => {
    redis.disconnect()
    await server.stop()
  })

  it('on a Redis that never saw it, sends its text once and every other call as EVALSHA', async () => {
    const increment = luaScript(`return redis.call('INCRBY', KEYS[1], ARGV[1])`)
    await redis.config('RESETSTAT')
    const answers = await Promise.all(
      Array.from({ length: 200 }, () => increment.run(redis, ['lua-burst'], [1])),
    )
    expect(Math.max(...(answers as number[]))).toBe(200)
    expect(await redis.get('lua-burst')).toBe('200')
    const calls = await commandCalls(redis)
    expect(calls.eval).toBe(1)
    expect(calls.evalsha).toBe(199)
  })

  it('after Redis lost its scripts (SCRIPT FLUSH), sends the text again and goes on', async () => {
    const text = `return redis.call('SET', KEYS[1], ARGV[1])`
    const setter = luaScript(text)
    await setter.run(redis, ['lua-flush'], ['a'])
    await setter.run(redis, ['lua-flush'], ['b'])
    await redis.script('FLUSH')
    await setter.run(redis, ['lua-flush'], ['c'])
    await setter.run(redis, ['lua-flush'], ['d'])
    expect(await redis.get('lua-flush')).toBe('d')
    expect(await redis.script('EXISTS', createHash('sha1').update(text).digest('hex'))).toEqual([1])
  })

  it('a script error on the first call still leaves the script stored for the next', async () => {
    const failing = luaScript(
      `if ARGV[1] == 'fail' then return redis.error_reply('refused') end return 'ok'`,
    )
    await expect(failing.run(redis, [], ['fail'])).rejects.toThrow('refused')
    await redis.config('RESETSTAT')
    expect(await failing.run(redis, [], ['go'])).toBe('ok')
    expect((await commandCalls(redis)).eval).toBeUndefined()
  })
})
