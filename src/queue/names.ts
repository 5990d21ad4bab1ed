import type { FeedFamily } from '../config/settings.ts'

/**
 * Queue names. BullMQ 6 refuses `:` in a queue name (it separates the key parts), so the fetch queue
 * of a family is `fetch-<family>`; with the prefix its keys read `<QUEUE_PREFIX>:fetch-sports:...`.
 */
export function fetchQueueName(family: FeedFamily): string {
  return `fetch-${family}`
}

export const REQUESTS_QUEUE = 'requests'

/**
 * The `requests` queue of one chain: each chain's runner has its own pipeline worker with its own
 * sender, so a worker must only take its chain's requests.
 */
export function requestsQueueName(chainId: number): string {
  return `${REQUESTS_QUEUE}-${chainId}`
}
