import { Interface, type EventFragment } from 'ethers/abi'
import type { Log, Provider } from 'ethers/providers'
import { getBytes, hexlify, toUtf8Bytes, zeroPadBytes } from 'ethers/utils'
import { withFixedHash } from './abi-fragment.ts'
import { readCanonicalOracleRequest, type OracleRequestFields } from './oracle-request-data.ts'

/**
 * The Operator events and calls feedrunner relies on, in human-readable ABI form so they do not
 * depend on a compile. They match `@chainlink/contracts` Operator 1.0.0.
 */
export const OPERATOR_ABI = [
  'event OracleRequest(bytes32 indexed specId, address requester, bytes32 requestId, uint256 payment, address callbackAddr, bytes4 callbackFunctionId, uint256 cancelExpiration, uint256 dataVersion, bytes data)',
  'event CancelOracleRequest(bytes32 indexed requestId)',
  'event OracleResponse(bytes32 indexed requestId)',
  'function fulfillOracleRequest2(bytes32 requestId, uint256 payment, address callbackAddress, bytes4 callbackFunctionId, uint256 expiration, bytes data) returns (bool)',
  'function setAuthorizedSenders(address[] senders)',
  'function isAuthorizedSender(address sender) view returns (bool)',
  'function getAuthorizedSenders() view returns (address[])',
  'function cancelOracleRequest(bytes32 requestId, uint256 payment, bytes4 callbackFunc, uint256 expiration)',
] as const

export const operatorInterface = new Interface(OPERATOR_ABI)

// Read for every request: their hashes are computed once (abi-fragment.ts).
const ORACLE_REQUEST_EVENT = withFixedHash(operatorInterface.getEvent('OracleRequest')!)
const FULFILL_ORACLE_REQUEST2 = withFixedHash(
  operatorInterface.getFunction('fulfillOracleRequest2')!,
)

export const ORACLE_REQUEST_TOPIC = ORACLE_REQUEST_EVENT.topicHash
export const CANCEL_ORACLE_REQUEST_TOPIC =
  operatorInterface.getEvent('CancelOracleRequest')!.topicHash
export const ORACLE_RESPONSE_TOPIC = operatorInterface.getEvent('OracleResponse')!.topicHash

const IS_AUTHORIZED_SENDER = operatorInterface.getFunction('isAuthorizedSender')!
const GET_AUTHORIZED_SENDERS = operatorInterface.getFunction('getAuthorizedSenders')!

/**
 * The senders an Operator (or an AuthorizedForwarder: both are Chainlink's AuthorizedReceiver)
 * authorises: every address whose transaction may answer its requests, this process's keys or not.
 */
export async function authorisedSenders(provider: Provider, receiver: string): Promise<string[]> {
  const answer = await provider.call({
    to: receiver,
    data: operatorInterface.encodeFunctionData(GET_AUTHORIZED_SENDERS, []),
  })
  const [senders] = operatorInterface.decodeFunctionResult(GET_AUTHORIZED_SENDERS, answer)
  return [...(senders as string[])]
}

/**
 * The addresses among `senders` that the Operator at `operator` does not authorise (a fulfilment
 * from one reverts with "Not authorized sender"). Throws, naming the address, when nothing there
 * answers as an Operator.
 */
export async function unauthorisedSenders(
  provider: Provider,
  operator: string,
  senders: readonly string[],
): Promise<string[]> {
  const authorised = await Promise.all(
    senders.map(async (sender) => {
      const answer = await provider
        .call({
          to: operator,
          data: operatorInterface.encodeFunctionData(IS_AUTHORIZED_SENDER, [sender]),
        })
        .catch((error: unknown) => {
          throw new Error(
            `the contract at ${operator} does not answer isAuthorizedSender: ${error instanceof Error ? error.message : String(error)}`,
          )
        })
      if (answer === '0x')
        throw new Error(
          `no Operator contract answers at ${operator}: nothing is deployed there on this chain`,
        )
      return operatorInterface.decodeFunctionResult(IS_AUTHORIZED_SENDER, answer)[0] as boolean
    }),
  )
  return senders.filter((_, index) => !authorised[index])
}

/** The revert reason of a fulfilment whose commitment is gone: already fulfilled or cancelled. */
export const ALREADY_FULFILLED_REASON = 'Must have a valid requestId'

const UUID = /^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$/i

function uuidHex(externalJobId: string): string {
  if (!UUID.test(externalJobId))
    throw new Error(`externalJobID ${JSON.stringify(externalJobId)} is not a UUID`)
  return externalJobId.replaceAll('-', '').toLowerCase()
}

/**
 * The spec id Solidity callers use for a job: the externalJobID without dashes as 32 ASCII bytes
 * (`bytes32("0eec7e1dd0d2476ca1a872dfb6633f47")`).
 */
export function specIdAscii(externalJobId: string): string {
  return hexlify(toUtf8Bytes(uuidHex(externalJobId)))
}

/** The other accepted spec id of a job: the 16 bytes of the UUID, right-padded with zeros to 32. */
export function specIdPadded(externalJobId: string): string {
  return zeroPadBytes(`0x${uuidHex(externalJobId)}`, 32)
}

/** Both spec ids a request for this job may carry (lowercase hex). */
export function specIdsOfJob(externalJobId: string): [ascii: string, padded: string] {
  return [specIdAscii(externalJobId), specIdPadded(externalJobId)]
}

/** The externalJobID (dashed, lowercase) a spec id names in either encoding, or undefined. */
export function externalJobIdOfSpecId(specId: string): string | undefined {
  const bytes = getBytes(specId)
  if (bytes.length !== 32) return undefined
  const ascii = Buffer.from(bytes).toString('latin1')
  let hex: string | undefined
  if (/^[0-9a-f]{32}$/i.test(ascii)) hex = ascii.toLowerCase()
  else if (bytes.slice(16).every((byte) => byte === 0))
    hex = Buffer.from(bytes.slice(0, 16)).toString('hex')
  if (hex === undefined) return undefined
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`
}

/** Where a log was seen; shared by requests and cancels. */
export interface LogPosition {
  chainId: number
  operator: string
  blockNumber: number
  blockHash: string
  txHash: string
  logIndex: number
  topics: string[]
  logData: string
}

/** An `OracleRequest` log, decoded (ids and selector in lowercase hex). */
export interface OracleRequestEvent extends LogPosition, OracleRequestFields {
  kind: 'request'
  specId: string
}

/** A `CancelOracleRequest` log, decoded. */
export interface CancelRequestEvent extends LogPosition {
  kind: 'cancel'
  requestId: string
}

function positionOf(log: Log, chainId: number): LogPosition {
  return {
    chainId,
    operator: log.address,
    blockNumber: log.blockNumber,
    blockHash: log.blockHash,
    txHash: log.transactionHash,
    logIndex: log.index,
    topics: [...log.topics],
    logData: log.data,
  }
}

/** Decodes an Operator log; returns undefined for other events. */
export function decodeOperatorLog(
  log: Log,
  chainId: number,
): OracleRequestEvent | CancelRequestEvent | undefined {
  const topic0 = log.topics[0]
  if (topic0 === ORACLE_REQUEST_TOPIC) {
    // The Operator's own layout is read by slicing; anything else goes to ethers' decoder.
    const fields = readCanonicalOracleRequest(log.data, log.topics) ?? decodedByEthers(log)
    return {
      kind: 'request',
      ...positionOf(log, chainId),
      specId: fields.specId.toLowerCase(),
      requester: fields.requester,
      requestId: fields.requestId.toLowerCase(),
      payment: fields.payment,
      callbackAddr: fields.callbackAddr,
      callbackFunctionId: fields.callbackFunctionId.toLowerCase(),
      cancelExpiration: fields.cancelExpiration,
      dataVersion: fields.dataVersion,
      data: fields.data,
    }
  }
  if (topic0 === CANCEL_ORACLE_REQUEST_TOPIC) {
    return {
      kind: 'cancel',
      ...positionOf(log, chainId),
      requestId: (log.topics[1] ?? '0x').toLowerCase(),
    }
  }
  return undefined
}

/**
 * An event fragment (a spec's `ethabidecodelog` abi) that is the Operator's `OracleRequest`: the same
 * types, indexing and name, whatever its parameters are called, so its logs have the Operator's layout.
 */
export function isOracleRequestFragment(fragment: EventFragment): boolean {
  return (
    !fragment.anonymous &&
    fragment.topicHash === ORACLE_REQUEST_TOPIC &&
    fragment.inputs.every(
      (input, index) => input.indexed === ORACLE_REQUEST_EVENT.inputs[index]?.indexed,
    )
  )
}

/** An `OracleRequest` log in any layout the ABI allows, decoded by ethers (throws when it is none). */
function decodedByEthers(log: Log): OracleRequestFields & { specId: string } {
  const parsed = operatorInterface.decodeEventLog(ORACLE_REQUEST_EVENT, log.data, log.topics)
  return {
    specId: parsed.specId as string,
    requester: parsed.requester as string,
    requestId: parsed.requestId as string,
    payment: parsed.payment as bigint,
    callbackAddr: parsed.callbackAddr as string,
    callbackFunctionId: parsed.callbackFunctionId as string,
    cancelExpiration: parsed.cancelExpiration as bigint,
    dataVersion: parsed.dataVersion as bigint,
    data: parsed.data as string,
  }
}

/** A decoded event as JSON-safe values (bigints as decimal strings), e.g. for a queue payload. */
export function eventToJson(
  event: OracleRequestEvent | CancelRequestEvent,
): Record<string, unknown> {
  return Object.fromEntries(
    Object.entries(event).map(([key, value]) => [
      key,
      typeof value === 'bigint' ? value.toString() : value,
    ]),
  )
}

/** The fields of a request that a fulfilment must repeat (the Operator checks their hash). */
export interface FulfilmentTarget {
  requestId: string
  payment: bigint
  callbackAddr: string
  callbackFunctionId: string
  cancelExpiration: bigint
}

/**
 * Calldata of `Operator.fulfillOracleRequest2`. `encodedData` is the callback's ABI-encoded arguments,
 * which must begin with the request id (e.g. `abi.encode(requestId, value)`).
 */
export function encodeFulfillOracleRequest2(target: FulfilmentTarget, encodedData: string): string {
  return operatorInterface.encodeFunctionData(FULFILL_ORACLE_REQUEST2, [
    target.requestId,
    target.payment,
    target.callbackAddr,
    target.callbackFunctionId,
    target.cancelExpiration,
    encodedData,
  ])
}
