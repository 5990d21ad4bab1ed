import { getAddress } from 'ethers/address'

/** The non-indexed fields of an `OracleRequest` log, as ethers' ABI decoder gives them. */
export interface OracleRequestFields {
  requester: string
  requestId: string
  payment: bigint
  callbackAddr: string
  callbackFunctionId: string
  cancelExpiration: bigint
  dataVersion: bigint
  /** The CBOR-encoded request parameters (a map body without its header), hex. */
  data: string
}

/** 32-byte words, in hex digits. */
const WORD = 64
/** Eight head words (seven values and the offset of `data`), then `data`'s length word. */
const HEAD_WORDS = 8
const CANONICAL_DATA_OFFSET = (HEAD_WORDS * 32).toString(16).padStart(WORD, '0')
const HEX = /^0x[0-9a-f]*$/
const ZERO_ADDRESS_PAD = '0'.repeat(WORD - 40)
const ZERO_SELECTOR_PAD = '0'.repeat(WORD - 8)

/**
 * An `OracleRequest` log's fields, its indexed spec id among them, when the log is laid out as the
 * Operator contract emits it (see readCanonicalData); undefined otherwise, and ethers decodes it.
 */
export function readCanonicalOracleRequest(
  hexData: string,
  topics: readonly string[],
): (OracleRequestFields & { specId: string }) | undefined {
  const specId = topics.length === 2 ? topics[1] : undefined
  const fields = specId === undefined ? undefined : readCanonicalData(hexData)
  return fields && specId !== undefined ? { ...fields, specId: specId.toLowerCase() } : undefined
}

/**
 * The fields of an `OracleRequest` log's data when it is laid out as the Operator contract emits it
 * (`abi.encode` of the event's values: a canonical head, zero padding, nothing after `data`), read by
 * slicing its hex; undefined for any other layout, which the caller then gives to ethers' decoder.
 * ethers builds its coders and a Result for every log, a twentieth of the runner's CPU in a burst;
 * this reads the same values (a property test holds the two equal for any input).
 */
function readCanonicalData(hexData: string): OracleRequestFields | undefined {
  const data = hexData.toLowerCase()
  const bodyDigits = data.length - 2 - (HEAD_WORDS + 1) * WORD
  if (bodyDigits < 0 || !HEX.test(data)) return undefined
  const word = (index: number): string => data.slice(2 + index * WORD, 2 + (index + 1) * WORD)
  const requester = word(0)
  const callbackAddr = word(3)
  const selector = word(4)
  if (!requester.startsWith(ZERO_ADDRESS_PAD) || !callbackAddr.startsWith(ZERO_ADDRESS_PAD))
    return undefined
  if (!selector.endsWith(ZERO_SELECTOR_PAD) || word(7) !== CANONICAL_DATA_OFFSET) return undefined
  // A length that is not a safe number is no layout the contract emits (and the fallback rejects it).
  const length = Number.parseInt(word(HEAD_WORDS), 16)
  if (!Number.isSafeInteger(length) || length * 2 > bodyDigits) return undefined
  const paddedDigits = Math.ceil(length / 32) * WORD
  if (paddedDigits !== bodyDigits) return undefined
  const body = data.slice(data.length - bodyDigits)
  if (!/^0*$/.test(body.slice(length * 2))) return undefined
  return {
    requester: getAddress(`0x${requester.slice(-40)}`),
    requestId: `0x${word(1)}`,
    payment: BigInt(`0x${word(2)}`),
    callbackAddr: getAddress(`0x${callbackAddr.slice(-40)}`),
    callbackFunctionId: `0x${selector.slice(0, 8)}`,
    cancelExpiration: BigInt(`0x${word(5)}`),
    dataVersion: BigInt(`0x${word(6)}`),
    data: `0x${body.slice(0, length * 2)}`,
  }
}
