import { Queue, type DefaultJobOptions } from 'bullmq'
import type { Connections } from '../queue/connections.ts'

export const REQUESTS_QUEUE = 'requests'

/** How every `requests` job is kept and retried (a replay's job too). */
export const REQUEST_JOB_OPTIONS: DefaultJobOptions = {
  // Gone once finished: the run record is what a finished request leaves (`runs`, `status`, the
  // metrics' requests_total). A late duplicate delivery is stopped before a job by the listeners'
  // shared consumed markers, and a job that runs anyway finds its run final and does nothing. Keeping
  // the job (a day, 100,000 at most) cost 4 Redis commands a request, and more once the bound was
  // reached (each finish then deletes an old job) (issue 20).
  removeOnComplete: true,
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
