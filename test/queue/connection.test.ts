import { Worker } from 'bullmq'
import { afterEach, describe, expect, it } from 'vitest'
import type { Redis } from 'ioredis'
import { startPrivateRedis, type PrivateRedis } from '../../src/dev/redis.ts'
import { waitFor } from '../../src/dev/process.ts'
import { createRedisConnection } from '../../src/queue/connection.ts'
import { settlesWithin } from '../support/settles-within.ts'

describe('a worker connection closed while Redis is away', () => {
  let redis: PrivateRedis | undefined
  const connections: Redis[] = []

  afterEach(async () => {
    for (const connection of connections.splice(0)) connection.disconnect()
    await redis?.stop()
    redis = undefined
  })

  function workerConnection(url: string): Redis {
    const connection = createRedisConnection(url, 'worker')
    connection.on('error', () => undefined)
    connections.push(connection)
    return connection
  }

  it('ends, with end emitted and held commands rejected, when disconnected while waiting to reconnect', async () => {
    redis = await startPrivateRedis()
    const connection = workerConnection(redis.url)
    await connection.ping()
    await redis.stop()
    await waitFor(
      'the connection to wait for a reconnect',
      async () => connection.status === 'reconnecting',
      5_000,
    )
    const held = connection.get('any-key').then(
      () => 'answered',
      (error: Error) => error.message,
    )
    const ended = new Promise<void>((resolve) => connection.once('end', resolve))

    connection.disconnect()

    expect(await settlesWithin(ended, 2_000)).toBeUndefined()
    expect(connection.status).toBe('end')
    expect(await settlesWithin(held, 2_000)).toMatch(/Connection is closed/)
  })

  it('lets a BullMQ worker close in the second after Redis came back (its blocking connection is still waiting to reconnect)', async () => {
    redis = await startPrivateRedis()
    const port = redis.port
    const worker = new Worker('close-probe', async () => undefined, {
      connection: workerConnection(redis.url),
      prefix: 'connection-test',
    })
    worker.on('error', () => undefined)
    await worker.waitUntilReady()
    await redis.stop()
    // Long enough for the retry delay to grow past the restart below.
    await new Promise((resolve) => setTimeout(resolve, 1_500))
    redis = await startPrivateRedis({ port })

    expect(await settlesWithin(worker.close(), 5_000)).toBeUndefined()
    expect(worker.isRunning()).toBe(false)
  })

  it('lets a BullMQ worker close while Redis is down', async () => {
    redis = await startPrivateRedis()
    const worker = new Worker('close-probe', async () => undefined, {
      connection: workerConnection(redis.url),
      prefix: 'connection-test',
    })
    worker.on('error', () => undefined)
    await worker.waitUntilReady()
    await redis.stop()
    await new Promise((resolve) => setTimeout(resolve, 1_500))

    expect(await settlesWithin(worker.close(), 5_000)).toBeUndefined()
  })
})
