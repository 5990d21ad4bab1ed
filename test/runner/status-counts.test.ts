import { Queue, Worker } from 'bullmq'
import { Redis } from 'ioredis'
import { afterAll, describe, expect, it } from 'vitest'
import { queueDepth } from '../../src/runner/status.ts'
import { testRedisUrl, uniquePrefix } from '../support/redis.ts'

const redis = new Redis(testRedisUrl())
afterAll(() => redis.disconnect())

describe('queueDepth', () => {
  it('counts each state as BullMQ getJobCounts does, without loading BullMQ', async () => {
    const prefix = uniquePrefix('status-counts')
    const name = 'requests-31337'
    const queue = new Queue(name, { connection: redis, prefix })
    // A worker without a processor takes jobs one at a time, as a test moves them.
    const worker = new Worker(name, null, {
      connection: new Redis(testRedisUrl(), { maxRetriesPerRequest: null }),
      prefix,
    })
    try {
      for (let index = 0; index < 6; index += 1) await queue.add('request', { index })
      await queue.add('later', {}, { delay: 600_000 })
      const token = 'status-counts'
      const taken = []
      for (let index = 0; index < 4; index += 1) taken.push(await worker.getNextJob(token))
      await taken[0]!.moveToCompleted('done', token, false)
      await taken[1]!.moveToFailed(new Error('bridge answered 502'), token, false)
      await taken[2]!.moveToFailed(new Error('bridge answered 502'), token, false)
      // taken[3] stays active; two jobs still wait.

      const counts = await queue.getJobCounts('waiting', 'active', 'delayed', 'failed', 'completed')
      const depth = await queueDepth(redis, prefix, name)
      expect(depth).toEqual({ queue: name, ...counts })
      expect(depth).toEqual({
        queue: name,
        waiting: 2,
        active: 1,
        delayed: 1,
        failed: 2,
        completed: 1,
      })
      expect(await queueDepth(redis, prefix, 'requests-1')).toEqual({
        queue: 'requests-1',
        waiting: 0,
        active: 0,
        delayed: 0,
        failed: 0,
        completed: 0,
      })
    } finally {
      await worker.close(true)
      await queue.close()
    }
  })
})
