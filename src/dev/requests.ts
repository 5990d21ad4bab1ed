import { AbiCoder, Contract, type JsonRpcProvider, type Provider, type Wallet } from 'ethers'
import { specIdAscii } from '../chain/operator.ts'

/** FeedConsumer's ValueType enum, in its declaration order; it picks the fulfil callback. */
export const VALUE_TYPES = ['uint256', 'int256', 'bool', 'string', 'bytes32', 'bytes'] as const
export type ValueType = (typeof VALUE_TYPES)[number]

export interface ConsumerRequest {
  externalJobId: string
  valueType: ValueType
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

/**
 * Sends `requests` through a FeedConsumer as fast as the chain takes them: nonce, fees and gas are
 * fixed here and every transaction is signed locally, so a request costs one JSON-RPC call instead of
 * ethers' per-send round trips for nonce, fee data and network.
 */
export async function sendConsumerRequests(consumer: Contract, signer: Wallet, requests: readonly ConsumerRequest[], onSent?: (sent: SentRequest, index: number) => void): Promise<SentRequest[]> {
  const provider = signer.provider as JsonRpcProvider
  const [network, feeData, firstNonce] = await Promise.all([provider.getNetwork(), provider.getFeeData(), signer.getNonce('pending')])
  const to = await consumer.getAddress()
  const maxPriorityFeePerGas = feeData.maxPriorityFeePerGas ?? 1_000_000_000n
  const maxFeePerGas = (feeData.maxFeePerGas ?? feeData.gasPrice ?? 2_000_000_000n) * 2n
  const signed = await Promise.all(
    requests.map((request, index) =>
      signer.signTransaction({
        type: 2,
        chainId: network.chainId,
        nonce: firstNonce + index,
        to,
        gasLimit: REQUEST_GAS_LIMIT,
        maxFeePerGas,
        maxPriorityFeePerGas,
        data: consumer.interface.encodeFunctionData('requestData', [
          specIdAscii(request.externalJobId),
          request.payment,
          VALUE_TYPES.indexOf(request.valueType),
          request.params.map(([key]) => key),
          request.params.map(([, value]) => value),
        ]),
      }),
    ),
  )
  const hashes: string[] = []
  const sentAt: number[] = []
  for (let start = 0; start < signed.length; start += BROADCAST_BATCH) {
    const batch = signed.slice(start, start + BROADCAST_BATCH)
    const now = Date.now()
    hashes.push(...(await Promise.all(batch.map((raw) => provider.send('eth_sendRawTransaction', [raw]) as Promise<string>))))
    sentAt.push(...batch.map(() => now))
  }
  await waitForNonce(provider, signer.address, firstNonce + signed.length)
  const receipts = await Promise.all(hashes.map((hash) => provider.getTransactionReceipt(hash)))
  const sent: SentRequest[] = []
  for (const [index, hash] of hashes.entries()) {
    const receipt = receipts[index]
    if (!receipt || receipt.status !== 1) throw new Error(`request transaction ${hash} failed`)
    const event = receipt.logs.map((log) => consumer.interface.parseLog(log)).find((parsed) => parsed?.name === 'DataRequested')
    if (!event) throw new Error(`request transaction ${hash} emitted no DataRequested event`)
    const result = { requestId: String(event.args.requestId).toLowerCase(), txHash: hash, blockNumber: receipt.blockNumber, sentAt: sentAt[index] ?? Date.now() }
    sent.push(result)
    onSent?.(result, index)
  }
  return sent
}

/**
 * Waits until the account's mined transaction count reaches `nonce`. ethers' waitForTransaction is
 * not used here: a transaction mined between its first receipt check and its block subscription is
 * only noticed at the next block, which never comes on an idle automining chain.
 */
async function waitForNonce(provider: JsonRpcProvider, address: string, nonce: number, timeoutMs = 120_000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (Number(await provider.send('eth_getTransactionCount', [address, 'latest'])) < nonce) {
    if (Date.now() > deadline) throw new Error(`transactions of ${address} up to nonce ${nonce - 1} not mined within ${timeoutMs} ms`)
    await new Promise((resolveDelay) => setTimeout(resolveDelay, 20))
  }
}

/**
 * Waits for the consumer's `RequestFulfilled` events of the given requests, reading logs in block
 * ranges (one poll for any number of requests). Resolves with what arrived by the deadline.
 */
export async function waitForFulfilments(
  consumer: Contract,
  provider: Provider,
  requestIds: readonly string[],
  options: { fromBlock: number; timeoutMs: number; pollIntervalMs?: number; onFulfilled?: (fulfilment: Fulfilment) => void },
): Promise<Map<string, Fulfilment>> {
  const wanted = new Set(requestIds.map((id) => id.toLowerCase()))
  const found = new Map<string, Fulfilment>()
  const deadline = Date.now() + options.timeoutMs
  const topic = consumer.interface.getEvent('RequestFulfilled')!.topicHash
  const address = await consumer.getAddress()
  let fromBlock = options.fromBlock
  while (found.size < wanted.size && Date.now() < deadline) {
    const head = await provider.getBlockNumber()
    if (head >= fromBlock) {
      const logs = await provider.getLogs({ address, topics: [topic], fromBlock, toBlock: head })
      for (const log of logs) {
        const parsed = consumer.interface.parseLog(log)
        const requestId = String(parsed?.args.requestId).toLowerCase()
        if (!parsed || !wanted.has(requestId) || found.has(requestId)) continue
        const valueType = VALUE_TYPES[Number(parsed.args.valueType)] ?? 'bytes'
        const fulfilment = { requestId, value: decodeValue(valueType, String(parsed.args.value)), blockNumber: log.blockNumber, txHash: log.transactionHash, seenAt: Date.now() }
        found.set(requestId, fulfilment)
        options.onFulfilled?.(fulfilment)
      }
      fromBlock = head + 1
    }
    if (found.size < wanted.size) await new Promise((resolveDelay) => setTimeout(resolveDelay, options.pollIntervalMs ?? 100))
  }
  return found
}

export function decodeValue(valueType: ValueType, encoded: string): unknown {
  return AbiCoder.defaultAbiCoder().decode([valueType], encoded)[0]
}
