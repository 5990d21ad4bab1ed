import { Queue } from 'bullmq'
import type { SharedClock } from '../metrics/index.ts'
import type { Connections } from '../queue/connections.ts'
import type { RequestPayload } from './request-payload.ts'
import { requestsQueueName } from '../queue/names.ts'
import { requestJobOptions, type RetryPolicy } from './retry-policy.ts'

// The names live with the other queue names: `status` reads them without loading BullMQ.
export { REQUESTS_QUEUE, requestsQueueName } from '../queue/names.ts'

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
  retry?: RetryPolicy,
): Queue {
  // Auto-pipelined too: a scan's adds of many requests leave in one write.
  const queueConnection = connections.redis('worker', 'requests queue', {
    enableAutoPipelining: true,
  })
  const requestsQueue = new Queue(requestsQueueName(chainId), {
    connection: queueConnection,
    prefix,
    defaultJobOptions: requestJobOptions(retry),
  })
  return connections.watch(requestsQueue, `requests queue of chain ${chainId}`)
}
