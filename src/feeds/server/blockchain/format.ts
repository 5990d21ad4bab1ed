import { FeedServiceError } from '../errors.ts'

// Value formatting shared by the blockchain records. The service mirrors Amberdata: integers as
// decimal strings, addresses in lowercase, times as ISO 8601 UTC.

/** An integer (wei, gas, block number) as a decimal string. */
export function decimal(value: bigint | number): string {
  return BigInt(value).toString()
}

/** A block time (seconds since the epoch) as ISO 8601 UTC with milliseconds: `2019-12-06T15:00:47.000Z`. */
export function isoTime(seconds: bigint | number): string {
  return new Date(Number(seconds) * 1000).toISOString()
}

/** Amberdata writes every address in lowercase. */
export function lowerAddress(address: string): string {
  return address.toLowerCase()
}

/**
 * A wei amount where FEEDS.md asks for a number (`maxFeePerGas`, `maxPriorityFeePerGas`): a JSON
 * number while it is exact (below 2^53, i.e. any fee under ~9 million gwei), else the decimal string,
 * so a value is never silently rounded.
 */
export function exactNumber(value: bigint): number | string {
  return value <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(value) : value.toString()
}

const ADDRESS = /^0x[0-9a-fA-F]{40}$/
const TX_HASH = /^0x[0-9a-fA-F]{64}$/

/** The catalog validates parameters before they reach us; this is the last line of defence. */
export function checkAddress(address: string): string {
  if (!ADDRESS.test(address))
    throw new FeedServiceError(
      400,
      `address must be a 0x-prefixed address of 40 hex digits (got ${JSON.stringify(address.slice(0, 80))})`,
    )
  return address.toLowerCase()
}

export function checkTxHash(hash: string): string {
  if (!TX_HASH.test(hash))
    throw new FeedServiceError(
      400,
      `hash must be a 0x-prefixed transaction hash of 64 hex digits (got ${JSON.stringify(hash.slice(0, 80))})`,
    )
  return hash.toLowerCase()
}
