import { AbiCoder, zeroPadValue, toBeHex } from 'ethers'
import { describe, expect, it } from 'vitest'
import { exactNumber } from '../../../src/feeds/server/blockchain/format.ts'
import {
  TOPICS,
  decodeTransferLog,
  decodeTransfers,
  type LogLike,
} from '../../../src/feeds/server/blockchain/transfer-logs.ts'

// Log shapes no test token produces: the un-indexed Transfer of early NFTs (CryptoKitties), and
// logs that share a transfer topic but are not transfers. The live shapes are covered on anvil.

const abi = AbiCoder.defaultAbiCoder()
const TOKEN = '0x06012C8cf97BEaD5deAe237070F9587f8E7A266d'
const FROM = '0x1111111111111111111111111111111111111111'
const TO = '0x2222222222222222222222222222222222222222'
const topic = (address: string) => zeroPadValue(address, 32)

function log(parts: Partial<LogLike>): LogLike {
  return { address: TOKEN, topics: [], data: '0x', index: 0, ...parts }
}

describe('decodeTransferLog', () => {
  it('decodes a Transfer with nothing indexed (CryptoKitties) from its data', () => {
    const [transfer] = decodeTransferLog(
      log({
        topics: [TOPICS.transfer],
        data: abi.encode(['address', 'address', 'uint256'], [FROM, TO, 1234n]),
        index: 3,
      }),
    )
    expect(transfer).toEqual({
      shape: 'unindexed',
      tokenAddress: TOKEN.toLowerCase(),
      from: FROM,
      to: TO,
      amount: 1234n,
      tokenId: undefined,
      logIndex: 3,
    })
  })

  it('ignores logs that carry a transfer topic with the wrong body', () => {
    // ERC20 shape with no data, ERC721 shape with data, a topic that is not an address.
    expect(decodeTransferLog(log({ topics: [TOPICS.transfer, topic(FROM), topic(TO)] }))).toEqual(
      [],
    )
    expect(
      decodeTransferLog(
        log({
          topics: [TOPICS.transfer, topic(FROM), topic(TO), toBeHex(5, 32)],
          data: toBeHex(1, 32),
        }),
      ),
    ).toEqual([])
    expect(
      decodeTransferLog(
        log({ topics: [TOPICS.transfer, `0x${'ff'.repeat(32)}`, topic(TO)], data: toBeHex(1, 32) }),
      ),
    ).toEqual([])
    expect(
      decodeTransferLog(
        log({
          topics: [TOPICS.transferBatch, topic(FROM), topic(FROM), topic(TO)],
          data: '0x1234',
        }),
      ),
    ).toEqual([])
  })

  it('ignores a TransferBatch whose ids and values differ in length', () => {
    const data = abi.encode(['uint256[]', 'uint256[]'], [[1n, 2n], [5n]])
    expect(
      decodeTransferLog(
        log({ topics: [TOPICS.transferBatch, topic(FROM), topic(FROM), topic(TO)], data }),
      ),
    ).toEqual([])
  })

  it('orders the transfers of a receipt by log index', () => {
    const erc20 = (index: number, amount: bigint) =>
      log({ topics: [TOPICS.transfer, topic(FROM), topic(TO)], data: toBeHex(amount, 32), index })
    expect(
      decodeTransfers([erc20(9, 2n), erc20(4, 1n)]).map((transfer) => [
        transfer.logIndex,
        transfer.amount,
      ]),
    ).toEqual([
      [4, 1n],
      [9, 2n],
    ])
  })
})

describe('exactNumber (maxFeePerGas and maxPriorityFeePerGas)', () => {
  it('is a number while exact and a decimal string beyond 2^53', () => {
    expect(exactNumber(7_000_000_000n)).toBe(7_000_000_000)
    expect(exactNumber(2n ** 53n + 1n)).toBe('9007199254740993')
  })
})
