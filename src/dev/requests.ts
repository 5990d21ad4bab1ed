import {
  AbiCoder,
  Contract,
  keccak256,
  type JsonRpcProvider,
  type Provider,
  type TransactionReceipt,
  type Wallet,
} from 'ethers'
import { postJsonRpcBatch } from '../chain/sender/json-rpc-batch.ts'
import { isToleratedRefusal } from '../chain/sender/node-refusal.ts'
import { specIdAscii } from '../chain/operator.ts'
import { CONSUMER_VALUE_TYPES, type ConsumerValueType } from '../pipeline/index.ts'

/** FeedConsumer's ValueType enum, in its declaration order; it picks the fulfil callback. */
export const VALUE_TYPES = CONSUMER_VALUE_TYPES
export type ValueType = ConsumerValueType

export interface ConsumerRequest {
  externalJobId: string
  valueType: ValueType
  /**
   * 1: sent as the Operator's oracleRequest (FeedConsumer.requestDataV1), which a job answering with
   * fulfillOracleRequest needs; 2 (default): operatorRequest.
   */
  version?: 1 | 2
  /** Request parameters in order; `path` and `times` are parameters like any other. */
  params: ReadonlyArray<readonly [string, string]>
  /** LINK juels paid to the Operator. */
  payment: bigint
}

export interface SentRequest {
  requestId: string
  txHash: string
  blockNumber: number
  sentAt: number
}

export interface Fulfilment {
  requestId: string
  /** The stored value, decoded as its ValueType (bigint for integers). */
  value: unknown
  blockNumber: number
  txHash: string
  seenAt: number
}

const REQUEST_GAS_LIMIT = 600_000n
/** Raw transactions broadcast at once; the chain takes them in nonce order either way. */
const BROADCAST_BATCH = 32

/** Transactions signed ahead of sending, in nonce order. */
export interface SignedTransactions {
  from: string
  firstNonce: number
  raws: string[]
  /** The hash of each raw transaction, known before it is sent. */
  hashes: string[]
}

/**
 * Signs one FeedConsumer `requestData` transaction per request, nonces from the signer's pending nonce
 * upwards, with fixed fees and gas: a request then costs one JSON-RPC call instead of ethers' per-send
 * round trips for nonce, fee data and network.
 */
export async function signConsumerRequests(
  consumer: Contract,
  signer: Wallet,
  requests: readonly ConsumerRequest[],
): Promise<SignedTransactions> {
  const provider = signer.provider as JsonRpcProvider
  const [network, feeData, firstNonce] = await Promise.all([
    provider.getNetwork(),
    provider.getFeeData(),
    signer.getNonce('pending'),
  ])
  const to = await consumer.getAddress()
  const maxPriorityFeePerGas = feeData.maxPriorityFeePerGas ?? 1_000_000_000n
  const maxFeePerGas = (feeData.maxFeePerGas ?? feeData.gasPrice ?? 2_000_000_000n) * 2n
  const raws = await Promise.all(
    requests.map((request, index) =>
      signer.signTransaction({
        type: 2,
        chainId: network.chainId,
        nonce: firstNonce + index,
        to,
        gasLimit: REQUEST_GAS_LIMIT,
        maxFeePerGas,
        maxPriorityFeePerGas,
        data: consumer.interface.encodeFunctionData(
          request.version === 1 ? 'requestDataV1' : 'requestData',
          [
            specIdAscii(request.externalJobId),
            request.payment,
            VALUE_TYPES.indexOf(request.valueType),
            request.params.map(([key]) => key),
            request.params.map(([, value]) => value),
          ],
        ),
      }),
    ),
  )
  return { from: signer.address, firstNonce, raws, hashes: raws.map((raw) => keccak256(raw)) }
}

/**
 * Sends pre-signed transactions of one sender to `rpcUrl` strictly in nonce order, over plain HTTP
 * JSON-RPC (one kept-alive connection), each call answered before the next is made: `window` = 1 sends
 * one transaction per call; a larger window sends up to `window` as one JSON-RPC batch, which anvil
 * takes in the batch's order. Order matters because anvil's automine can leave transactions that
 * arrived ahead of their nonce in its pool (foundry-rs/foundry#10122); concurrent calls on several
 * connections, or pipelined on one WebSocket (anvil's server may answer those in any order), do not
 * keep it. With `perSecond`, transaction i is due i / perSecond seconds after the first, and each
 * call carries the transactions due by then (at most `window`), so a slow answer delays but does not
 * lower the rate. A transaction the node has already is no failure: a resend may meet it. Resolves
 * with the time (ms since the epoch) each transaction was sent.
 */
export async function sendRawInNonceOrder(
  rpcUrl: string,
  raws: readonly string[],
  options: { window?: number; perSecond?: number } = {},
): Promise<number[]> {
  const window = Math.max(1, options.window ?? 1)
  const sentAt: number[] = []
  const started = performance.now()
  let start = 0
  while (start < raws.length) {
    let size = Math.min(window, raws.length - start)
    if (options.perSecond !== undefined) {
      const wait = started + (start * 1000) / options.perSecond - performance.now()
      if (wait > 0) await new Promise((resolveDelay) => setTimeout(resolveDelay, wait))
      const due = Math.floor(((performance.now() - started) * options.perSecond) / 1000) + 1 - start
      size = Math.max(1, Math.min(size, due))
    }
    const batch = raws.slice(start, start + size)
    const now = Date.now()
    const outcomes = await postJsonRpcBatch(
      rpcUrl,
      batch.map((raw) => ['eth_sendRawTransaction', [raw]] as const),
    )
    outcomes.forEach((outcome, offset) => {
      // Sent again (a resend of what anvil lost): "already known", "transaction already imported" or
      // "nonce too low" mean the chain has it, not a failure (node-refusal.ts reads the words once).
      if (!outcome.ok && !isToleratedRefusal(outcome.message))
        throw new Error(
          `eth_sendRawTransaction (transaction ${start + offset} of ${raws.length}): ${outcome.message}`,
        )
    })
    sentAt.push(...batch.map(() => now))
    start += size
  }
  return sentAt
}

/**
 * A mined transaction's receipt. anvil may count a sender's nonce before the block holding the
 * transaction answers queries (seen once in CI), so a missing receipt is asked for again for a while.
 */
async function receiptOnceQueryable(
  provider: Provider,
  hash: string,
  timeoutMs = 10_000,
): Promise<TransactionReceipt | null> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const receipt = await provider.getTransactionReceipt(hash)
    if (receipt || Date.now() > deadline) return receipt
    await new Promise((resolveDelay) => setTimeout(resolveDelay, 20))
  }
}

/**
 * Sends `requests` through a FeedConsumer as fast as the chain takes them (see signConsumerRequests)
 * and waits until they are mined.
 */
export async function sendConsumerRequests(
  consumer: Contract,
  signer: Wallet,
  requests: readonly ConsumerRequest[],
  onSent?: (sent: SentRequest, index: number) => void,
): Promise<SentRequest[]> {
  const provider = signer.provider as JsonRpcProvider
  const signedTransactions = await signConsumerRequests(consumer, signer, requests)
  const signed = signedTransactions.raws
  const hashes: string[] = []
  const sentAt: number[] = []
  for (let start = 0; start < signed.length; start += BROADCAST_BATCH) {
    const batch = signed.slice(start, start + BROADCAST_BATCH)
    const now = Date.now()
    hashes.push(
      ...(await Promise.all(
        batch.map((raw) => provider.send('eth_sendRawTransaction', [raw]) as Promise<string>),
      )),
    )
    sentAt.push(...batch.map(() => now))
  }
  await waitForSigned(provider, signedTransactions)
  const receipts = await Promise.all(hashes.map((hash) => receiptOnceQueryable(provider, hash)))
  const sent: SentRequest[] = []
  for (const [index, hash] of hashes.entries()) {
    const receipt = receipts[index]
    if (!receipt)
      throw new Error(
        `request transaction ${hash} has no receipt although its sender's nonce moved past it`,
      )
    if (receipt.status !== 1) throw new Error(`request transaction ${hash} reverted`)
    const event = receipt.logs
      .map((log) => consumer.interface.parseLog(log))
      .find((parsed) => parsed?.name === 'DataRequested')
    if (!event) throw new Error(`request transaction ${hash} emitted no DataRequested event`)
    const result = {
      requestId: String(event.args.requestId).toLowerCase(),
      txHash: hash,
      blockNumber: receipt.blockNumber,
      sentAt: sentAt[index] ?? Date.now(),
    }
    sent.push(result)
    onSent?.(result, index)
  }
  return sent
}

/**
 * Waits until every transaction of `signed` is mined (its sender's mined count past the last nonce).
 * anvil under load has been seen to drop part of an accepted burst from its pool and go on mining
 * empty blocks (the sender's nonce stood still for 120 s in a loaded test run, and in about half the
 * bench runs of 2,000 requests): whenever the count stands still for `stallMs`, what is not mined is
 * sent again, same bytes, as a wallet would; a transaction still in the pool is refused as known,
 * harmlessly.
 */
export async function waitForSigned(
  provider: Pick<JsonRpcProvider, 'send'>,
  signed: SignedTransactions,
  options: {
    timeoutMs?: number
    stallMs?: number
    /** Told how many transactions are sent again, each time. */
    onResend?: (count: number) => void
  } = {},
): Promise<void> {
  const { firstNonce, raws } = signed
  await waitForNonce(provider, signed.from, firstNonce + raws.length, {
    timeoutMs: options.timeoutMs,
    stallMs: options.stallMs,
    resend: async (minedCount) => {
      const unmined = raws.slice(Math.max(0, minedCount - firstNonce))
      options.onResend?.(unmined.length)
      for (const raw of unmined)
        await provider.send('eth_sendRawTransaction', [raw]).catch(() => undefined)
    },
  })
}

/**
 * Waits until the account's mined transaction count reaches `nonce`. ethers' waitForTransaction is
 * not used here: a transaction mined between its first receipt check and its block subscription is
 * only noticed at the next block, which never comes on an idle automining chain.
 */
export async function waitForNonce(
  provider: Pick<JsonRpcProvider, 'send'>,
  address: string,
  nonce: number,
  options: {
    timeoutMs?: number
    /** Called with the mined count when it has not moved for `stallMs` (send the rest again). */
    resend?: (minedCount: number) => Promise<void>
    stallMs?: number
  } = {},
): Promise<void> {
  const { timeoutMs = 120_000, stallMs = 5_000 } = options
  const deadline = Date.now() + timeoutMs
  let lastCount = -1
  let movedAt = Date.now()
  for (;;) {
    const count = Number(await provider.send('eth_getTransactionCount', [address, 'latest']))
    if (count >= nonce) return
    if (count !== lastCount) {
      lastCount = count
      movedAt = Date.now()
    } else if (options.resend && Date.now() - movedAt > stallMs) {
      await options.resend(count)
      movedAt = Date.now()
    }
    if (Date.now() > deadline)
      throw new Error(
        `transactions of ${address} up to nonce ${nonce - 1} not mined within ${timeoutMs} ms`,
      )
    await new Promise((resolveDelay) => setTimeout(resolveDelay, 20))
  }
}

/**
 * Waits for the consumer's `RequestFulfilled` events of the given requests, reading logs in block
 * ranges (one poll for any number of requests). Resolves with what arrived by the deadline, or as soon
 * as every request still missing is one `settledElsewhere` names (a run that ended without a
 * fulfilment: nothing will arrive for it).
 */
export async function waitForFulfilments(
  consumer: Contract,
  provider: Provider,
  requestIds: readonly string[],
  options: {
    fromBlock: number
    timeoutMs: number
    pollIntervalMs?: number
    onFulfilled?: (fulfilment: Fulfilment) => void
    /** Of the request ids still waited for, those that will never be fulfilled. */
    settledElsewhere?: (pending: readonly string[]) => Promise<readonly string[]>
  },
): Promise<Map<string, Fulfilment>> {
  const wanted = new Set(requestIds.map((id) => id.toLowerCase()))
  const givenUp = new Set<string>()
  const found = new Map<string, Fulfilment>()
  const deadline = Date.now() + options.timeoutMs
  const topic = consumer.interface.getEvent('RequestFulfilled')!.topicHash
  const address = await consumer.getAddress()
  let fromBlock = options.fromBlock
  // The chain is read at least once, however short the bound (a caller that only wants what is there
  // now passes 1 ms: on a loaded machine the deadline passed before a first read, and it found nothing).
  for (let first = true; found.size + givenUp.size < wanted.size; first = false) {
    if (!first && Date.now() >= deadline) break
    const head = await provider.getBlockNumber()
    if (head >= fromBlock) {
      const logs = await provider.getLogs({ address, topics: [topic], fromBlock, toBlock: head })
      for (const log of logs) {
        const parsed = consumer.interface.parseLog(log)
        const requestId = String(parsed?.args.requestId).toLowerCase()
        if (!parsed || !wanted.has(requestId) || found.has(requestId)) continue
        const valueType = VALUE_TYPES[Number(parsed.args.valueType)] ?? 'bytes'
        const fulfilment = {
          requestId,
          value: decodeValue(valueType, String(parsed.args.value)),
          blockNumber: log.blockNumber,
          txHash: log.transactionHash,
          seenAt: Date.now(),
        }
        found.set(requestId, fulfilment)
        options.onFulfilled?.(fulfilment)
      }
      fromBlock = head + 1
    }
    if (options.settledElsewhere && found.size + givenUp.size < wanted.size) {
      const pending = [...wanted].filter((id) => !found.has(id) && !givenUp.has(id))
      for (const id of await options.settledElsewhere(pending)) givenUp.add(id.toLowerCase())
    }
    if (found.size + givenUp.size < wanted.size && Date.now() < deadline)
      await new Promise((resolveDelay) => setTimeout(resolveDelay, options.pollIntervalMs ?? 100))
  }
  return found
}

/**
 * A stored answer as its ValueType; a Raw answer stays the callback's encoded arguments, the request
 * id first (decodeAnswer of src/pipeline reads it with the job's types).
 */
export function decodeValue(valueType: ValueType, encoded: string): unknown {
  if (valueType === 'raw') return encoded
  return AbiCoder.defaultAbiCoder().decode([valueType], encoded)[0]
}
