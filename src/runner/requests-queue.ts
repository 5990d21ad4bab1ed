import { Queue } from 'bullmq'
import { createRedisConnection } from '../queue/connection.ts'

export const REQUESTS_QUEUE = 'requests'

/** The `requests` queue, on a connection of its own. */
export function createRequestsQueue(redisUrl: string, prefix: string): Queue {
  // Auto-pipelined too: a scan's adds of many requests leave in one write.
  const queueConnection = createRedisConnection(redisUrl, 'worker', {
    enableAutoPipelining: true,
  })
  queueConnection.on('error', () => undefined)
  const requestsQueue = new Queue(REQUESTS_QUEUE, {
    connection: queueConnection,
    prefix,
    defaultJobOptions: {
      // Kept for a day so a late duplicate delivery (another process's listener) joins the finished job.
      removeOnComplete: { age: 24 * 3600, count: 100_000 },
      removeOnFail: { age: 7 * 24 * 3600 },
      // Transient bridge failures (adapter restarting) are retried: 1+2+4+...+64 s, about two minutes.
      attempts: 8,
      backoff: { type: 'exponential', delay: 1_000 },
    },
  })
  // Reconnection errors: the pipeline worker's 'error' event already reports an outage.
  requestsQueue.on('error', () => undefined)
  return requestsQueue
}
