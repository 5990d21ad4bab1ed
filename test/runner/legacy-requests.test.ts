import { Queue } from 'bullmq'
import { afterAll, describe, expect, it } from 'vitest'
import { createRedisConnection } from '../../src/queue/connection.ts'
import {
  adoptLegacyRequests,
  REQUESTS_QUEUE,
  requestsQueueName,
} from '../../src/runner/requests-queue.ts'
import { testRedisUrl, uniquePrefix } from '../support/redis.ts'

describe('requests left in the queue of the releases before chains', () => {
  const connection = createRedisConnection(testRedisUrl(), 'worker')
  const prefix = uniquePrefix('legacy-requests')
  const legacy = new Queue(REQUESTS_QUEUE, { connection, prefix })
  const chainQueue = new Queue(requestsQueueName(31337), { connection, prefix })

  afterAll(async () => {
    await legacy.obliterate({ force: true })
    await chainQueue.obliterate({ force: true })
    await legacy.close()
    await chainQueue.close()
    connection.disconnect()
  })

  it("move to their chain's queue under the same job id; another chain's stay", async () => {
    await legacy.add('request', { chainId: 31337, requestId: '0x01' }, { jobId: '31337-0xop-0x01' })
    await legacy.add('request', { chainId: 1, requestId: '0x02' }, { jobId: '1-0xop-0x02' })
    expect(await adoptLegacyRequests(legacy, chainQueue, 31337)).toBe(1)
    expect((await chainQueue.getJob('31337-0xop-0x01'))?.data).toEqual({
      chainId: 31337,
      requestId: '0x01',
    })
    expect(await legacy.getJob('31337-0xop-0x01')).toBeUndefined()
    expect(await legacy.getJob('1-0xop-0x02')).toBeDefined()
    expect(await adoptLegacyRequests(legacy, chainQueue, 31337)).toBe(0)
  })
})
