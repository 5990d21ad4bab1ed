import { getBytes, keccak256 } from 'ethers'
import { FeedrunnerError } from '../config/errors.ts'

/**
 * Ethereum's logs bloom (yellow paper, section 4.3.1: M3:2048): every block header carries a
 * 2048-bit filter of the addresses and topics of its logs. An item sets three bits, each taken from
 * an 11-bit value of the item's keccak256 (bytes 0-1, 2-3, 4-5); bit b is counted from the right of
 * the 256-byte big-endian field. A bit not set proves the item absent; all three set only means it
 * may be there (another item may have set them). The listener tests a block's bloom before paying an
 * eth_getLogs call for it.
 */
export const LOGS_BLOOM_BYTES = 256

/** Whether `bloom` (0x + 512 hex) may hold `item` (an address's 20 bytes or a topic's 32, as hex). */
export function bloomMayHold(bloom: Uint8Array, item: string): boolean {
  const hash = getBytes(keccak256(item))
  for (let pair = 0; pair < 6; pair += 2) {
    const bit = (((hash[pair] as number) << 8) | (hash[pair + 1] as number)) & 0x7ff
    const byte = bloom[LOGS_BLOOM_BYTES - 1 - (bit >> 3)] as number
    if ((byte & (1 << (bit & 7))) === 0) return false
  }
  return true
}

/**
 * Whether a block whose header carries `logsBloom` may hold a log emitted by one of `addresses` with
 * one of `topics` as its topic0: the bloom must hold an address and a topic (it cannot tell whether
 * they belong to the same log, so this may say yes when no such log is there, never no when one is).
 */
export function bloomMayHoldLog(
  logsBloom: string,
  addresses: readonly string[],
  topics: readonly string[],
): boolean {
  const bloom = getBytes(logsBloom)
  if (bloom.length !== LOGS_BLOOM_BYTES)
    throw new FeedrunnerError(`a logs bloom is ${LOGS_BLOOM_BYTES} bytes, not ${bloom.length}`, {
      kind: 'internal',
    })
  return (
    addresses.some((address) => bloomMayHold(bloom, address)) &&
    topics.some((topic) => bloomMayHold(bloom, topic))
  )
}

/** Whether no bit of `logsBloom` is set: the bloom of a block without logs, or of a node that fills none. */
export function isEmptyBloom(logsBloom: string): boolean {
  return /^0x0*$/i.test(logsBloom)
}
