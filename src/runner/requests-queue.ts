import { Queue } from 'bullmq'
import type { Connections } from '../queue/connections.ts'

export const REQUESTS_QUEUE = 'requests'

/** The `requests` queue, on a connection of its own. */
export function createRequestsQueue(connections: Connections, prefix: string): Queue {
  // Auto-pipelined too: a scan's adds of many requests leave in one write.
  const queueConnection = connections.redis('worker', 'requests queue', {
    enableAutoPipelining: true,
  })
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
  return connections.watch(requestsQueue, 'requests queue')
}
