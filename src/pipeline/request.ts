import { randomBytes } from 'node:crypto'
import { Encoder } from 'cbor-x'
import {
  AbiCoder,
  concat,
  getAddress,
  getBytes,
  hexlify,
  id,
  Interface,
  type BytesLike,
} from 'ethers'
import type { FulfilMethod } from './answer-shape.ts'
import {
  OPERATOR_ABI,
  ORACLE_REQUEST_TOPIC,
  operatorInterface,
  specIdAscii,
  specIdPadded,
} from '../chain/operator.ts'

/**
 * A direct request as it arrives from chain, built off chain for dry runs and tests: the CBOR buffer
 * Chainlink's `req._add(key, value)` writes, and the Operator's OracleRequest log around it.
 */
export const ORACLE_REQUEST_EVENT = OPERATOR_ABI[0]
export const FULFILL_ORACLE_REQUEST2 = OPERATOR_ABI[3]
export { ORACLE_REQUEST_TOPIC }

const encoder = new Encoder({ useRecords: false, mapsAsObjects: true })

/** A request parameter as a consumer adds it: `_add` (string), `_addInt`/`_addUint` (bigint), `_addBytes`, `_addStringArray`. */
export type RequestParamValue = string | bigint | Uint8Array | readonly string[]

/**
 * The CBOR map body (no header), exactly as Chainlink's CBOR library writes it: for each call in
 * order, the key as a text string, then the value: text string (`_add`), integer in the shortest
 * form (`_addInt`/`_addUint`; bignum tags beyond 64 bits), byte string (`_addBytes`), or an
 * indefinite-length array of text strings (`_addStringArray`).
 */
export function encodeRequestParams(
  params: ReadonlyArray<readonly [string, RequestParamValue]>,
): string {
  return hexlify(
    concat(params.flatMap(([key, value]) => [encoder.encode(key), encodeParamValue(value)])),
  )
}

function encodeParamValue(value: RequestParamValue): Uint8Array {
  if (typeof value === 'bigint') return encodeInteger(value)
  if (typeof value === 'string' || value instanceof Uint8Array) return encoder.encode(value)
  return getBytes(
    concat([
      Uint8Array.of(0x9f),
      ...value.map((item) => encoder.encode(item)),
      Uint8Array.of(0xff),
    ]),
  )
}

const UINT64_MAX = (1n << 64n) - 1n

/** CBOR.sol's encodeInt/encodeUInt: major type 0 or 1 with the shortest length, tags 2/3 beyond 64 bits. */
function encodeInteger(value: bigint): Uint8Array {
  const major = value < 0n ? 1 : 0
  const magnitude = value < 0n ? -1n - value : value
  if (magnitude > UINT64_MAX) {
    const hex = magnitude.toString(16)
    const bytes = Uint8Array.from(Buffer.from(hex.length % 2 ? `0${hex}` : hex, 'hex'))
    return getBytes(
      concat([Uint8Array.of(0xc0 | (major === 0 ? 2 : 3)), header(2, BigInt(bytes.length)), bytes]),
    )
  }
  return header(major, magnitude)
}

function header(major: number, length: bigint): Uint8Array {
  const type = major << 5
  if (length < 24n) return Uint8Array.of(type | Number(length))
  for (const [extra, size] of [
    [24, 1],
    [25, 2],
    [26, 4],
    [27, 8],
  ] as const) {
    if (length < 1n << BigInt(8 * size)) {
      const bytes = new Uint8Array(1 + size)
      bytes[0] = type | extra
      for (let i = 0; i < size; i++) bytes[size - i] = Number((length >> BigInt(8 * i)) & 0xffn)
      return bytes
    }
  }
  throw new Error('integer too large')
}

/** Both encodings a Solidity caller may use for a job's spec id; the first is what `stringToBytes32(jobId)` gives. */
export function specIdsOf(externalJobID: string): { ascii: string; uuidBytes: string } {
  return { ascii: specIdAscii(externalJobID), uuidBytes: specIdPadded(externalJobID) }
}

export interface OracleRequestInit {
  externalJobID: string
  params: ReadonlyArray<readonly [string, RequestParamValue]>
  requester?: string
  callbackAddress?: string
  /** Signature (`fulfillUint256(bytes32,uint256)`) or 0x 4-byte selector. */
  callbackFunction?: string
  payment?: bigint
  requestId?: string
  cancelExpiration?: bigint
  dataVersion?: bigint
}

export interface OracleRequest {
  requestId: string
  specId: string
  requester: string
  callbackAddress: string
  callbackFunctionId: string
  payment: bigint
  cancelExpiration: bigint
  dataVersion: bigint
  /** The CBOR buffer. */
  data: string
  /** The log as a node sees it. */
  log: { topics: string[]; data: string }
}

const DRY_RUN_REQUESTER = '0x000000000000000000000000000000000000dEaD'

export function buildOracleRequest(init: OracleRequestInit): OracleRequest {
  const requester = getAddress(init.requester ?? DRY_RUN_REQUESTER)
  const callbackAddress = getAddress(init.callbackAddress ?? requester)
  const callbackFunctionId = selectorOf(init.callbackFunction ?? 'fulfill(bytes32,uint256)')
  const request = {
    requestId: init.requestId ?? hexlify(randomBytes(32)),
    specId: specIdsOf(init.externalJobID).ascii,
    requester,
    callbackAddress,
    callbackFunctionId,
    payment: init.payment ?? 10n ** 17n,
    cancelExpiration: init.cancelExpiration ?? BigInt(Math.floor(Date.now() / 1000) + 300),
    dataVersion: init.dataVersion ?? 1n,
    data: encodeRequestParams(init.params),
  }
  const event = operatorInterface.getEvent('OracleRequest')!
  const encoded = operatorInterface.encodeEventLog(event, [
    request.specId,
    request.requester,
    request.requestId,
    request.payment,
    request.callbackAddress,
    request.callbackFunctionId,
    request.cancelExpiration,
    request.dataVersion,
    request.data,
  ])
  return { ...request, log: { topics: encoded.topics, data: encoded.data } }
}

export function selectorOf(fn: string): string {
  if (/^0x[0-9a-fA-F]{8}$/.test(fn)) return fn.toLowerCase()
  return id(fn.replace(/\s+/g, '')).slice(0, 10)
}

/** Decodes fulfillOracleRequest2 calldata (to check or print what a run would send). */
export function decodeFulfillment(calldata: BytesLike): {
  requestId: string
  payment: bigint
  callbackAddress: string
  callbackFunctionId: string
  expiration: bigint
  data: string
} {
  const decoded = operatorInterface.decodeFunctionData('fulfillOracleRequest2', calldata)
  return {
    requestId: decoded[0] as string,
    payment: decoded[1] as bigint,
    callbackAddress: decoded[2] as string,
    callbackFunctionId: decoded[3] as string,
    expiration: decoded[4] as bigint,
    data: decoded[5] as string,
  }
}

const fulfilV1 = new Interface([
  'function fulfillOracleRequest(bytes32 requestId, uint256 payment, address callbackAddress, bytes4 callbackFunctionId, uint256 expiration, bytes32 data)',
])

/**
 * Either Operator fulfilment (fulfillOracleRequest2, or the one-word fulfillOracleRequest) with its
 * data: the callback's encoded arguments after the request id, or the bytes32 word.
 */
export function decodeAnyFulfilment(
  calldata: BytesLike,
): ReturnType<typeof decodeFulfillment> & { method: FulfilMethod } {
  const text = hexlify(calldata)
  if (!text.startsWith(fulfilV1.getFunction('fulfillOracleRequest')!.selector))
    return { method: 'fulfillOracleRequest2', ...decodeFulfillment(text) }
  const decoded = fulfilV1.decodeFunctionData('fulfillOracleRequest', text)
  return {
    method: 'fulfillOracleRequest',
    requestId: decoded[0] as string,
    payment: decoded[1] as bigint,
    callbackAddress: decoded[2] as string,
    callbackFunctionId: decoded[3] as string,
    expiration: decoded[4] as bigint,
    data: decoded[5] as string,
  }
}

/** The value a fulfilment carries after its requestId, decoded as `type`. */
export function decodeFulfilledValue(data: BytesLike, type: string): unknown {
  return AbiCoder.defaultAbiCoder().decode(['bytes32', type], data)[1]
}

/**
 * `jobRun.meta` as a Chainlink node fills it for a direct request (its oracleRequestToMap):
 * `{ oracleRequest: {...} }`, addresses checksummed, other bytes as lowercase 0x-hex, numbers as
 * decimal text. The runner, a dry run and `jobs run --tx` all give it this way.
 */
export function oracleRequestMeta(request: Omit<OracleRequest, 'log'>): Record<string, unknown> {
  return {
    oracleRequest: {
      specId: request.specId.toLowerCase(),
      requester: getAddress(request.requester),
      requestId: request.requestId.toLowerCase(),
      payment: request.payment.toString(),
      callbackAddr: getAddress(request.callbackAddress),
      callbackFunctionId: request.callbackFunctionId.toLowerCase(),
      cancelExpiration: request.cancelExpiration.toString(),
      dataVersion: request.dataVersion.toString(),
      data: request.data.toLowerCase(),
    },
  }
}
