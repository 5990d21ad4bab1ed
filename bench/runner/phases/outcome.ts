/**
 * What every phase with a fulfiller (the runner's, the bare fulfiller's) shares: sending the phase's
 * requests and waiting for their fulfilments, then reading the outcome from the chain (latency from
 * the request's block to the fulfilment's block, in-flight peak, blocks, exactly once).
 *
 * Block times: anvil's block timestamps have one-second resolution, so each block is stamped with the
 * time its newHeads notification reached the bench (one WebSocket subscription); a latency is the
 * difference of two such stamps (the request's block, the fulfilment's block), both seen the same way.
 */
import { Wallet } from 'ethers'
import {
  sendRawInNonceOrder,
  signConsumerRequests,
  waitForFulfilments,
  waitForSigned,
  type Fulfilment,
  type SentRequest,
  type SignedTransactions,
} from '../../../src/dev/requests.ts'
import { requestsOfTransactions } from '../../../src/dev/requests-mined.ts'
import { minedSender, REQUEST, type Chain, type Context } from '../load.ts'
import { round, rpc, summary } from '../measure.ts'
import { PHASE_TIMEOUT_MS, REQUEST_WINDOW, step } from '../settings.ts'

/** Signed now, so the phase itself costs the bench one JSON-RPC call per request (or per batch). */
export function signRequests(
  ctx: Context,
  chain: Chain,
  count: number,
): Promise<SignedTransactions> {
  return signConsumerRequests(
    chain.dev.consumer,
    chain.dev.deployer,
    Array.from({ length: count }, () => REQUEST(ctx)),
  )
}

export interface Delivered {
  sent: SentRequest[]
  /** When each request was sent (ms since the epoch). */
  sentAt: number[]
  fulfilled: Map<string, Fulfilment>
}

/**
 * Sends the signed requests (paced: what is due on the clock, one at a time unless anvil falls
 * behind; burst: ordered batches, as fast as anvil takes them) and waits until each is fulfilled or
 * the phase times out.
 */
export async function sendAndAwaitFulfilments(
  chain: Chain,
  signed: SignedTransactions,
  options: { label: string; fromBlock: number; perSecond?: number },
): Promise<Delivered> {
  const { dev } = chain
  const count = signed.raws.length
  const { label, fromBlock, perSecond } = options
  step(`${label}: sending ${count} requests${perSecond ? ` at ${perSecond}/s` : ''}`)
  const { sent, sentAt } = await sendRequests(chain, signed, options)
  step(`${label}: requests mined, waiting for fulfilments`)
  const fulfilled = await waitForFulfilments(
    dev.consumer,
    dev.provider,
    sent.map((item) => item.requestId),
    { fromBlock, timeoutMs: PHASE_TIMEOUT_MS, pollIntervalMs: 250 },
  )
  return { sent, sentAt, fulfilled }
}

/**
 * Sends the signed requests (see sendAndAwaitFulfilments) and reads them off the chain once mined.
 * What anvil loses from its pool meanwhile is sent again, and the bench says so: that phase's rate
 * and latency then include the wait.
 */
export async function sendRequests(
  chain: Chain,
  signed: SignedTransactions,
  options: { label: string; fromBlock: number; perSecond?: number },
): Promise<Pick<Delivered, 'sent' | 'sentAt'>> {
  const { anvil, dev } = chain
  const sentAt = await sendRawInNonceOrder(anvil.rpcUrl, signed.raws, {
    window: REQUEST_WINDOW,
    perSecond: options.perSecond,
  })
  await waitForSigned(minedSender(anvil.rpcUrl), signed, {
    timeoutMs: PHASE_TIMEOUT_MS,
    onResend: (count) =>
      step(`${options.label}: the mined nonce stood still; sending the ${count} unmined again`),
  })
  const sent = await requestsOfTransactions(
    dev.provider,
    dev.addresses.operator,
    signed.hashes,
    sentAt,
    { fromBlock: options.fromBlock, timeoutMs: PHASE_TIMEOUT_MS },
  )
  return { sent, sentAt }
}

/** The current nonce of each address: transactions mined from it so far. */
export function minedNonces(chain: Chain, addresses: readonly string[]): Promise<number[]> {
  return Promise.all(
    addresses.map(async (address) =>
      Number(await rpc<string>(chain.anvil.rpcUrl, 'eth_getTransactionCount', [address, 'latest'])),
    ),
  )
}

export interface Outcome {
  requests: number
  fulfilled: number
  /** Each request answered by exactly one OracleResponse, and every sender nonce spent on one of them. */
  exactlyOnce: boolean
  /** Requests per second as mined (first to last request block seen). */
  requestsPerSecond: number
  /** Requests per second as the bench sent them (first to last send). */
  sentPerSecond: number
  /** Fulfilled / (last fulfilment block seen - first request block seen). */
  fulfilmentsPerSecond: number
  /** Fulfilments per second between the first and the last fulfilment. */
  drainPerSecond: number
  seconds: number
  latencyMs: { p50: number; p95: number; p99: number; max: number }
  /** Requests mined but not fulfilled yet, at most. */
  maxInFlight: number
  /** Blocks mined during the phase (requests and fulfilments). */
  blocks: number
  /** Distinct blocks holding the phase's requests, its fulfilments, and neither (empty or foreign). */
  blockKinds: { withRequests: number; withFulfilments: number; withNeither: number }
}

/** Reads the phase's outcome from the chain and the block watcher's stamps. */
export async function outcomeOf(
  chain: Chain,
  delivered: Delivered,
  senders: { head: number; addresses: readonly string[]; noncesBefore: readonly number[] },
): Promise<Outcome> {
  const { anvil, watcher } = chain
  const { sent, sentAt, fulfilled } = delivered
  const count = sent.length
  const blocks = Number(await rpc<string>(anvil.rpcUrl, 'eth_blockNumber')) - senders.head
  const requestBlocks = sent.map((item) => item.blockNumber)
  const fulfilBlocks = [...fulfilled.values()].map((item) => item.blockNumber)
  const seen = (block: number) => watcher.seen(block)
  const firstRequest = await seen(Math.min(...requestBlocks))
  const lastRequest = await seen(Math.max(...requestBlocks))
  const latencies: number[] = []
  const timeline: Array<[number, 1 | -1]> = []
  for (const item of sent) {
    const requestSeen = await seen(item.blockNumber)
    timeline.push([requestSeen, 1])
    const fulfilment = fulfilled.get(item.requestId)
    if (!fulfilment) continue
    const fulfilSeen = await seen(fulfilment.blockNumber)
    latencies.push(fulfilSeen - requestSeen)
    timeline.push([fulfilSeen, -1])
  }
  timeline.sort((a, b) => a[0] - b[0] || b[1] - a[1])
  let inFlight = 0
  let maxInFlight = 0
  for (const [, change] of timeline) maxInFlight = Math.max(maxInFlight, (inFlight += change))
  const firstFulfil = fulfilBlocks.length > 0 ? await seen(Math.min(...fulfilBlocks)) : Number.NaN
  const lastFulfil = fulfilBlocks.length > 0 ? await seen(Math.max(...fulfilBlocks)) : Number.NaN
  const seconds = (lastFulfil - firstRequest) / 1000
  const { p50, p95, p99, max } = summary(latencies)
  return {
    requests: count,
    fulfilled: fulfilled.size,
    exactlyOnce: await answeredExactlyOnce(chain, delivered, senders),
    requestsPerSecond: round(count / Math.max(0.001, (lastRequest - firstRequest) / 1000)),
    sentPerSecond: round(count / Math.max(0.001, ((sentAt.at(-1) ?? 0) - (sentAt[0] ?? 0)) / 1000)),
    fulfilmentsPerSecond: round(fulfilled.size / seconds),
    drainPerSecond: round(fulfilled.size / Math.max(0.001, (lastFulfil - firstFulfil) / 1000)),
    seconds: round(seconds, 2),
    latencyMs: { p50: round(p50, 0), p95: round(p95, 0), p99: round(p99, 0), max: round(max, 0) },
    maxInFlight,
    blocks,
    blockKinds: {
      withRequests: new Set(requestBlocks).size,
      withFulfilments: new Set(fulfilBlocks).size,
      withNeither: blocks - new Set([...requestBlocks, ...fulfilBlocks]).size,
    },
  }
}

/** Exactly once: one OracleResponse per request, and every sender nonce spent on one of them. */
async function answeredExactlyOnce(
  chain: Chain,
  delivered: Delivered,
  senders: { head: number; addresses: readonly string[]; noncesBefore: readonly number[] },
): Promise<boolean> {
  const { dev } = chain
  const count = delivered.sent.length
  const responses = await dev.provider.getLogs({
    address: dev.addresses.operator,
    topics: [dev.operator.interface.getEvent('OracleResponse')!.topicHash],
    fromBlock: senders.head + 1,
  })
  const ours = new Set(delivered.sent.map((item) => item.requestId))
  const responded = responses
    .map((log) => (log.topics[1] ?? '').toLowerCase())
    .filter((id) => ours.has(id))
  const noncesAfter = await minedNonces(chain, senders.addresses)
  const txCount = noncesAfter.reduce(
    (sum, after, index) => sum + after - (senders.noncesBefore[index] as number),
    0,
  )
  return (
    delivered.fulfilled.size === count &&
    responded.length === count &&
    new Set(responded).size === count &&
    txCount === count
  )
}

/** The addresses of the keys. */
export function addressesOf(keys: readonly string[]): string[] {
  return keys.map((key) => new Wallet(key).address)
}
