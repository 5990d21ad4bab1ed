import type { AbstractProvider } from 'ethers'
import { FeedServiceError } from '../errors.ts'
import { decimal, isoTime } from './format.ts'

export interface AccountBalanceRecord {
  address: string
  blockNumber: string
  /** ISO 8601 UTC time of the block the balance was read at. */
  timestamp: string
  /** Integer string in the chain's smallest unit (wei). */
  balance: string
}

/**
 * The balance at the latest block. The block is fixed first and the balance read AT that block, so
 * `blockNumber`, `timestamp` and `balance` always describe the same state, even while blocks arrive.
 */
export async function readAccountBalance(
  provider: AbstractProvider,
  blockchain: string,
  address: string,
): Promise<AccountBalanceRecord> {
  const block = await provider.getBlock('latest')
  if (block === null)
    throw new FeedServiceError(502, `blockchain '${blockchain}' returned no latest block`)
  const balance = await provider.getBalance(address, block.number)
  return {
    address,
    blockNumber: decimal(block.number),
    timestamp: isoTime(block.timestamp),
    balance: decimal(balance),
  }
}
