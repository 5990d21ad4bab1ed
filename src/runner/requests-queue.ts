import { Queue, type DefaultJobOptions } from 'bullmq'
import type { Connections } from '../queue/connections.ts'

export const REQUESTS_QUEUE = 'requests'

/** How every `requests` job is kept and retried (a replay's job too). */
export const REQUEST_JOB_OPTIONS: DefaultJobOptions = {
  // Kept for a day so a late duplicate delivery (another process's listener) joins the finished job.
  removeOnComplete: { age: 24 * 3600, count: 100_000 },
  removeOnFail: { age: 7 * 24 * 3600 },
  // Transient bridge failures (adapter restarting) are retried: 1+2+4+...+64 s, about two minutes.
  attempts: 8,
  backoff: { type: 'exponential', delay: 1_000 },
}

/** The `requests` queue, on a connection of its own. */
export function createRequestsQueue(connections: Connections, prefix: string): Queue {
  // Auto-pipelined too: a scan's adds of many requests leave in one write.
  const queueConnection = connections.redis('worker', 'requests queue', {
    enableAutoPipelining: true,
  })
  const requestsQueue = new Queue(REQUESTS_QUEUE, {
    connection: queueConnection,
    prefix,
    defaultJobOptions: REQUEST_JOB_OPTIONS,
  })
  return connections.watch(requestsQueue, 'requests queue')
}
