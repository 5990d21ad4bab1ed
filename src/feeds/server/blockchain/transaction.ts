import {
  Transaction,
  type AbstractProvider,
  type TransactionLike,
  type TransactionReceipt,
  type TransactionResponse,
} from 'ethers'
import { FeedServiceError } from '../errors.ts'
import { decimal, exactNumber, isoTime, lowerAddress } from './format.ts'

// The `transaction` record, in Amberdata's shape (FEEDS.md's transaction table and the service's
// sample gora_blockchain_transaction.json): integers as decimal strings, `"null"` for an absent
// contract address, `to: [{address: "null"}]` for a contract creation, `v` as the chain encodes it.

export interface StatusResult {
  code: string | null
  confirmed: boolean
  success: boolean | null
  name: 'successful' | 'failed' | 'pending' | 'unknown'
}

/**
 * `statusResult` from a receipt status: 1 successful, 0 failed. A receipt without status predates
 * Byzantium (it carries a state root instead): its outcome is not in the receipt, so 'unknown'.
 */
export function statusResult(status: number | null | undefined): StatusResult {
  if (status === undefined) return { code: null, confirmed: false, success: null, name: 'pending' }
  if (status === null) return { code: null, confirmed: true, success: null, name: 'unknown' }
  return status === 1
    ? { code: '0x1', confirmed: true, success: true, name: 'successful' }
    : { code: '0x0', confirmed: true, success: false, name: 'failed' }
}

/**
 * `v` as the chain signs it: a legacy transaction carries `networkV` (EIP-155: chainId * 2 + 35 or
 * 36; 27/28 before EIP-155), a typed transaction (EIP-2930, EIP-1559, ...) its y parity (0 or 1).
 */
export function signatureV(tx: TransactionResponse): string {
  const signature = tx.signature
  if (tx.type === 0) return (signature.networkV ?? BigInt(signature.v)).toString()
  return String(signature.yParity)
}

/**
 * The signed transaction, RLP encoded, rebuilt from the node's fields with ethers. Returned only
 * when the rebuilt transaction hashes to the transaction's own hash: a type ethers cannot encode
 * (an L2 deposit, a future type) or a field the node left out gives "" (FEEDS.md: "may be empty").
 */
export function rawTransaction(tx: TransactionResponse): string {
  try {
    const fields: TransactionLike = {
      type: tx.type,
      to: tx.to,
      nonce: tx.nonce,
      gasLimit: tx.gasLimit,
      data: tx.data,
      value: tx.value,
      chainId: tx.chainId,
      signature: tx.signature,
    }
    // Legacy and EIP-2930 transactions sign a gas price; later types sign fee caps instead.
    if (tx.type === 0 || tx.type === 1) fields.gasPrice = tx.gasPrice
    else {
      fields.maxFeePerGas = tx.maxFeePerGas
      fields.maxPriorityFeePerGas = tx.maxPriorityFeePerGas
    }
    if (tx.type !== 0) fields.accessList = tx.accessList
    if (tx.type === 3) {
      fields.maxFeePerBlobGas = tx.maxFeePerBlobGas
      fields.blobVersionedHashes = tx.blobVersionedHashes
    }
    if (tx.type === 4) fields.authorizationList = tx.authorizationList
    const rebuilt = Transaction.from(fields)
    return rebuilt.hash === tx.hash ? rebuilt.serialized : ''
  } catch {
    return ''
  }
}

/** `maxFeePerGas` / `maxPriorityFeePerGas`: null for a transaction type without fee caps. */
function feeCap(value: bigint | null): number | string | null {
  return value === null ? null : exactNumber(value)
}

/** The fields that come from the transaction alone, known before it is mined. */
function signedFields(tx: TransactionResponse) {
  return {
    from: [{ address: lowerAddress(tx.from) }],
    gasLimit: decimal(tx.gasLimit),
    hash: tx.hash,
    input: tx.data,
    maxFeePerGas: feeCap(tx.maxFeePerGas),
    maxPriorityFeePerGas: feeCap(tx.maxPriorityFeePerGas),
    nonce: decimal(tx.nonce),
    // Amberdata leaves publicKey empty; the sender's address is in `from`.
    publicKey: '',
    r: tx.signature.r,
    raw: rawTransaction(tx),
    s: tx.signature.s,
    to: [{ address: tx.to === null ? 'null' : lowerAddress(tx.to) }],
    type: String(tx.type),
    v: signatureV(tx),
    value: decimal(tx.value),
  }
}

/** The record of a mined transaction. */
export function minedRecord(
  tx: TransactionResponse,
  receipt: TransactionReceipt,
  blockTimestamp: number,
  head: number,
): Record<string, unknown> {
  const signed = signedFields(tx)
  const result = statusResult(receipt.status)
  return {
    blockNumber: decimal(receipt.blockNumber),
    blockHash: receipt.blockHash,
    // ethers' TransactionReceipt.confirmations(): the block itself counts as the first confirmation.
    confirmations: decimal(Math.max(head - receipt.blockNumber + 1, 1)),
    contractAddress:
      receipt.contractAddress === null ? 'null' : lowerAddress(receipt.contractAddress),
    cumulativeGasUsed: decimal(receipt.cumulativeGasUsed),
    fee: decimal(receipt.fee),
    from: signed.from,
    gasLimit: signed.gasLimit,
    // The price actually paid (effectiveGasPrice): for an EIP-1559 transaction, base fee + tip.
    gasPrice: decimal(receipt.gasPrice),
    gasUsed: decimal(receipt.gasUsed),
    hash: signed.hash,
    index: receipt.index,
    input: signed.input,
    logsBloom: receipt.logsBloom,
    maxFeePerGas: signed.maxFeePerGas,
    maxPriorityFeePerGas: signed.maxPriorityFeePerGas,
    nonce: signed.nonce,
    publicKey: signed.publicKey,
    r: signed.r,
    raw: signed.raw,
    root: receipt.root ?? '',
    s: signed.s,
    status: result.code ?? '',
    timestamp: isoTime(blockTimestamp),
    to: signed.to,
    type: signed.type,
    v: signed.v,
    value: signed.value,
    statusResult: result,
  }
}

/**
 * The record of a transaction the node knows but has not mined: the block fields are null, there
 * are no confirmations, and `timestamp` is the time of this answer (Amberdata gives the time it
 * first saw the transaction, which a node does not tell).
 */
export function pendingRecord(
  tx: TransactionResponse,
  now: Date = new Date(),
): Record<string, unknown> {
  const signed = signedFields(tx)
  return {
    blockNumber: null,
    blockHash: null,
    confirmations: '0',
    contractAddress: 'null',
    cumulativeGasUsed: null,
    fee: null,
    from: signed.from,
    gasLimit: signed.gasLimit,
    gasPrice: tx.gasPrice === null ? null : decimal(tx.gasPrice),
    gasUsed: null,
    hash: signed.hash,
    index: null,
    input: signed.input,
    logsBloom: null,
    maxFeePerGas: signed.maxFeePerGas,
    maxPriorityFeePerGas: signed.maxPriorityFeePerGas,
    nonce: signed.nonce,
    publicKey: signed.publicKey,
    r: signed.r,
    raw: signed.raw,
    root: '',
    s: signed.s,
    status: null,
    timestamp: now.toISOString(),
    to: signed.to,
    type: signed.type,
    v: signed.v,
    value: signed.value,
    statusResult: statusResult(undefined),
  }
}

/** The full record of a transaction; 404 when the node does not know it. */
export async function readTransaction(
  provider: AbstractProvider,
  blockchain: string,
  hash: string,
): Promise<Record<string, unknown>> {
  const [tx, receipt, head] = await Promise.all([
    provider.getTransaction(hash),
    provider.getTransactionReceipt(hash),
    provider.getBlockNumber(),
  ])
  if (tx === null)
    throw new FeedServiceError(404, `transaction ${hash} not found on blockchain '${blockchain}'`)
  if (receipt === null) return pendingRecord(tx)
  const block = await provider.getBlock(receipt.blockHash)
  if (block === null)
    throw new FeedServiceError(
      502,
      `blockchain '${blockchain}' has a receipt for ${hash} but not its block ${receipt.blockNumber} (reorganised?)`,
    )
  return minedRecord(tx, receipt, block.timestamp, Math.max(head, receipt.blockNumber))
}
