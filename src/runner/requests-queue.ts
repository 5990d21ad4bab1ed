import { Queue, type DefaultJobOptions } from 'bullmq'
import type { SharedClock } from '../metrics/index.ts'
import type { Connections } from '../queue/connections.ts'
import type { RequestPayload } from './request-payload.ts'
import { requestsQueueName } from '../queue/names.ts'

// The names live with the other queue names: `status` reads them without loading BullMQ.
export { REQUESTS_QUEUE, requestsQueueName } from '../queue/names.ts'

/** How every `requests` job is kept and retried (a replay's job too). */
export const REQUEST_JOB_OPTIONS: DefaultJobOptions = {
  // Gone once finished: the run record is what a finished request leaves (`runs`, `status`, the
  // metrics' requests_total). A late duplicate delivery is stopped before a job by the listeners'
  // shared consumed markers, and a job that runs anyway finds its run final and does nothing. Keeping
  // the job (a day, 100,000 at most) cost 4 Redis commands a request, and more once the bound was
  // reached (each finish then deletes an old job).
  removeOnComplete: true,
  removeOnFail: { age: 7 * 24 * 3600 },
  // Transient bridge failures (adapter restarting) are retried: 1+2+4+...+64 s, about two minutes.
  attempts: 8,
  backoff: { type: 'exponential', delay: 1_000 },
}

/**
 * Adds a request's job (the listener's intake and `runs replay` alike), stamped with Redis's time
 * rather than BullMQ's default, this host's wall clock: the runner that takes it may be another host,
 * and the wait it reports (feedrunner_queue_wait_seconds) compares the two stamps.
 */
export async function addRequestJob(
  queue: Queue,
  payload: RequestPayload,
  jobId: string,
  clock: SharedClock,
): Promise<void> {
  await queue.add('request', payload, { jobId, timestamp: clock.now() })
}

/** A chain's `requests` queue, on a connection of its own. */
export function createRequestsQueue(
  connections: Connections,
  prefix: string,
  chainId: number,
): Queue {
  // Auto-pipelined too: a scan's adds of many requests leave in one write.
  const queueConnection = connections.redis('worker', 'requests queue', {
    enableAutoPipelining: true,
  })
  const requestsQueue = new Queue(requestsQueueName(chainId), {
    connection: queueConnection,
    prefix,
    defaultJobOptions: REQUEST_JOB_OPTIONS,
  })
  return connections.watch(requestsQueue, `requests queue of chain ${chainId}`)
}
