import fc from 'fast-check'
import { AbiCoder, getAddress, hexlify, type Log } from 'ethers'
import { describe, expect, it } from 'vitest'
import { readCanonicalOracleRequest } from '../../src/chain/oracle-request-data.ts'
import {
  decodeOperatorLog,
  operatorInterface,
  ORACLE_REQUEST_TOPIC,
} from '../../src/chain/operator.ts'

/**
 * An `OracleRequest` log's data is read by slicing its hex when it has the Operator's own layout, and
 * by ethers' ABI decoder otherwise (src/chain/oracle-request-data.ts). Whatever the bytes, the listener
 * must see exactly what ethers alone would have given it: the same fields, or an error.
 */
const TYPES = [
  'address',
  'bytes32',
  'uint256',
  'address',
  'bytes4',
  'uint256',
  'uint256',
  'bytes',
] as const
const SPEC_ID = `0x${'3'.repeat(64)}`

const word = (bytes: number) => fc.uint8Array({ minLength: bytes, maxLength: bytes }).map(hexlify)
const uint = fc.bigInt({ min: 0n, max: 2n ** 256n - 1n })
const requestValues = fc.tuple(
  word(20).map(getAddress),
  word(32),
  uint,
  word(20).map(getAddress),
  word(4),
  uint,
  uint,
  fc.uint8Array({ maxLength: 300 }).map(hexlify),
)

function logOf(data: string, topics: readonly string[] = [ORACLE_REQUEST_TOPIC, SPEC_ID]): Log {
  return {
    address: '0x0000000000000000000000000000000000000001',
    blockNumber: 7,
    blockHash: `0x${'b'.repeat(64)}`,
    transactionHash: `0x${'c'.repeat(64)}`,
    index: 0,
    topics,
    data,
  } as unknown as Log
}

/** What ethers' decoder alone makes of the log, in decodeOperatorLog's shape, or the error's text. */
function byEthersAlone(log: Log): unknown {
  try {
    const parsed = operatorInterface.decodeEventLog('OracleRequest', log.data, log.topics)
    return {
      specId: (parsed.specId as string).toLowerCase(),
      requester: parsed.requester,
      requestId: (parsed.requestId as string).toLowerCase(),
      payment: parsed.payment,
      callbackAddr: parsed.callbackAddr,
      callbackFunctionId: (parsed.callbackFunctionId as string).toLowerCase(),
      cancelExpiration: parsed.cancelExpiration,
      dataVersion: parsed.dataVersion,
      data: parsed.data,
    }
  } catch {
    return 'error'
  }
}

function byListener(log: Log): unknown {
  try {
    const event = decodeOperatorLog(log, 31337)
    if (event?.kind !== 'request') return event
    const { specId, requester, requestId, payment, callbackAddr, callbackFunctionId } = event
    const { cancelExpiration, dataVersion, data } = event
    return {
      specId,
      requester,
      requestId,
      payment,
      callbackAddr,
      callbackFunctionId,
      cancelExpiration,
      dataVersion,
      data,
    }
  } catch {
    return 'error'
  }
}

describe('reading OracleRequest data', () => {
  it('reads whatever abi.encode makes of any values by slicing, as ethers decodes it', () => {
    fc.assert(
      fc.property(requestValues, (values) => {
        const data = AbiCoder.defaultAbiCoder().encode(TYPES, values)
        expect(readCanonicalOracleRequest(data, [ORACLE_REQUEST_TOPIC, SPEC_ID])).toBeDefined()
        expect(byListener(logOf(data))).toEqual(byEthersAlone(logOf(data)))
      }),
      { numRuns: 500 },
    )
  })

  it('for any other bytes (mutated, cut, extended, upper-case, other topics) gives what ethers gives', () => {
    const mutated = fc
      .tuple(
        requestValues,
        fc.nat(1_200),
        fc.constantFrom('0', '1', 'f', 'F', 'g', ''),
        fc.integer({ min: -70, max: 70 }),
      )
      .map(([values, at, digit, lengthChange]) => {
        let data = AbiCoder.defaultAbiCoder().encode(TYPES, values)
        const place = 2 + (at % (data.length - 2))
        data = data.slice(0, place) + digit + data.slice(place + 1)
        if (lengthChange < 0) data = data.slice(0, Math.max(2, data.length + lengthChange))
        else data += '0'.repeat(lengthChange)
        return data
      })
    const topics = fc.constantFrom(
      [ORACLE_REQUEST_TOPIC, SPEC_ID],
      [ORACLE_REQUEST_TOPIC],
      [ORACLE_REQUEST_TOPIC, SPEC_ID, SPEC_ID],
    )
    fc.assert(
      fc.property(
        fc.oneof(
          mutated,
          mutated.map((data) => data.toUpperCase().replace('0X', '0x')),
        ),
        topics,
        (data, eventTopics) => {
          expect(byListener(logOf(data, eventTopics))).toEqual(
            byEthersAlone(logOf(data, eventTopics)),
          )
        },
      ),
      { numRuns: 2_000 },
    )
  })
})
