import { getBytes, hexlify, keccak256, randomBytes, type JsonRpcProvider } from 'ethers'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  bloomMayHold,
  bloomMayHoldLog,
  isEmptyBloom,
  LOGS_BLOOM_BYTES,
} from '../../src/chain/logs-bloom.ts'
import {
  CANCEL_ORACLE_REQUEST_TOPIC,
  ORACLE_REQUEST_TOPIC,
  ORACLE_RESPONSE_TOPIC,
} from '../../src/chain/operator.ts'
import {
  connectProvider,
  EMPTY_TRIE_ROOT,
  headHeaderOf,
  HeadTrackingWebSocketProvider,
} from '../../src/chain/provider.ts'
import { waitFor } from '../../src/dev/process.ts'
import { makeRequests, receiptOf, rpc, startTestChain, type TestChain } from './support.ts'

interface RawBlock {
  number: string
  hash: string
  logsBloom: string
  transactionsRoot: string
  transactions: string[]
}

interface RawLog {
  address: string
  topics: string[]
}

const hex = (number: number) => `0x${number.toString(16)}`
const randomAddress = () => hexlify(randomBytes(20))

/**
 * The yellow paper's bloom of a block's logs, built here apart from src/chain/logs-bloom.ts (which
 * only tests bits): three bits per address and topic, from keccak256 byte pairs (0,1), (2,3), (4,5),
 * bit b counted from the right of the 256-byte field.
 */
function bloomOf(logs: readonly RawLog[]): string {
  const bloom = new Uint8Array(LOGS_BLOOM_BYTES)
  for (const item of logs.flatMap((log) => [log.address, ...log.topics])) {
    const hash = getBytes(keccak256(item))
    for (const pair of [0, 2, 4]) {
      const bit = ((hash[pair]! << 8) | hash[pair + 1]!) % 2048
      bloom[LOGS_BLOOM_BYTES - 1 - Math.floor(bit / 8)]! |= 1 << (bit % 8)
    }
  }
  return hexlify(bloom)
}

/** Blooms and block headers as anvil makes them: a request's block, a block with none, an empty one. */
describe('logs blooms of real blocks (anvil)', () => {
  let chain: TestChain
  let provider: JsonRpcProvider
  let requestBlock: RawBlock
  let requestLogs: RawLog[]

  beforeAll(async () => {
    chain = await startTestChain()
    provider = chain.dev.provider as JsonRpcProvider
    const [request] = await makeRequests(chain, 1)
    requestBlock = await blockAt(request!.blockNumber)
    requestLogs = await rpc<RawLog[]>(provider, 'eth_getLogs', [
      { fromBlock: hex(request!.blockNumber), toBlock: hex(request!.blockNumber) },
    ])
  })

  afterAll(async () => {
    await chain?.stop()
  })

  const blockAt = (number: number | 'latest') =>
    rpc<RawBlock>(provider, 'eth_getBlockByNumber', [
      typeof number === 'number' ? hex(number) : number,
      false,
    ])

  it("a request's block carries the bloom of its logs, and the bloom holds each address and topic", () => {
    expect(requestLogs.length).toBeGreaterThanOrEqual(2)
    expect(bloomOf(requestLogs)).toBe(requestBlock.logsBloom)
    const bloom = getBytes(requestBlock.logsBloom)
    for (const log of requestLogs)
      for (const item of [log.address, ...log.topics]) expect(bloomMayHold(bloom, item)).toBe(true)
    const { operator, linkToken } = chain.dev.addresses
    expect(bloomMayHoldLog(requestBlock.logsBloom, [operator], [ORACLE_REQUEST_TOPIC])).toBe(true)
    // Any of the addresses, any of the topics: one of each in the bloom is enough.
    expect(
      bloomMayHoldLog(
        requestBlock.logsBloom,
        [randomAddress(), linkToken.toLowerCase()],
        [CANCEL_ORACLE_REQUEST_TOPIC, ORACLE_REQUEST_TOPIC],
      ),
    ).toBe(true)
  })

  it('says no for an address or a topic the block holds no log of', () => {
    const { operator, forwarder } = chain.dev.addresses
    const bloom = requestBlock.logsBloom
    // The Operator is there, the topics are not.
    expect(bloomMayHoldLog(bloom, [operator], [CANCEL_ORACLE_REQUEST_TOPIC])).toBe(false)
    expect(bloomMayHoldLog(bloom, [operator], [ORACLE_RESPONSE_TOPIC])).toBe(false)
    // The request topic is there, these contracts emitted nothing in the block.
    expect(bloomMayHoldLog(bloom, [forwarder], [ORACLE_REQUEST_TOPIC])).toBe(false)
    for (let random = 0; random < 20; random++)
      expect(bloomMayHoldLog(bloom, [randomAddress()], [ORACLE_REQUEST_TOPIC])).toBe(false)
    expect(bloomMayHoldLog(bloom, [], [ORACLE_REQUEST_TOPIC])).toBe(false)
    expect(() => bloomMayHoldLog('0x00', [operator], [ORACLE_REQUEST_TOPIC])).toThrow(/256 bytes/)
  })

  it('a block read: its bloom, and whether it holds a transaction (listed, and by its root)', async () => {
    const request = headHeaderOf(requestBlock)
    expect(request).toMatchObject({ logsBloom: requestBlock.logsBloom, noTransactions: false })
    // A transaction without a log: a transaction, a zero bloom.
    const deployer = chain.dev.deployer
    const transfer = await deployer.sendTransaction({
      to: randomAddress(),
      value: 1n,
    })
    const transferBlock = await blockAt(
      Number((await receiptOf(provider, transfer.hash)).blockNumber),
    )
    expect(isEmptyBloom(transferBlock.logsBloom)).toBe(true)
    expect(headHeaderOf(transferBlock)).toMatchObject({ noTransactions: false })
    await rpc(provider, 'evm_mine')
    const empty = await blockAt('latest')
    expect(empty.transactions).toEqual([])
    expect(empty.transactionsRoot).toBe(EMPTY_TRIE_ROOT)
    expect(headHeaderOf(empty)).toMatchObject({ noTransactions: true })
    expect(
      bloomMayHoldLog(empty.logsBloom, [chain.dev.addresses.operator], [ORACLE_REQUEST_TOPIC]),
    ).toBe(false)
  })

  it('a header without a transaction list is judged by its root; a bloom of another shape is left out', () => {
    const { transactions: _list, ...requestHeader } = requestBlock
    expect(headHeaderOf(requestHeader)).toMatchObject({ noTransactions: false })
    expect(
      headHeaderOf({
        ...requestHeader,
        transactionsRoot: EMPTY_TRIE_ROOT.toUpperCase().replace('0X', '0x'),
      }),
    ).toMatchObject({ noTransactions: true })
    // A list that says none, a root that says some: not empty (any sign of a transaction wins).
    expect(headHeaderOf({ ...requestBlock, transactions: [] })).toMatchObject({
      noTransactions: false,
    })
    const { transactionsRoot: _root, ...bare } = requestHeader
    expect(headHeaderOf(bare)).toMatchObject({ noTransactions: false })
    const odd = headHeaderOf({ ...requestBlock, logsBloom: '0x1234' })
    expect(odd?.hash).toBe(requestBlock.hash)
    expect(odd?.logsBloom).toBeUndefined()
  })

  it('a newHeads notification carries the bloom and the root: an empty block and a request block', async () => {
    const socket = await connectProvider(chain.anvil.wsUrl, { chainId: chain.dev.chainId })
    try {
      expect(socket).toBeInstanceOf(HeadTrackingWebSocketProvider)
      const tracking = socket as HeadTrackingWebSocketProvider
      await tracking.on('block', () => undefined)
      const notified = (number: number) =>
        waitFor(
          `the newHeads notification of block ${number}`,
          async () => (tracking.lastHead?.number ?? -1) >= number,
        )
      await rpc(provider, 'evm_mine')
      const mined = Number((await blockAt('latest')).number)
      await notified(mined)
      expect(tracking.lastHead).toMatchObject({ number: mined, noTransactions: true })
      expect(isEmptyBloom(tracking.lastHead!.logsBloom!)).toBe(true)
      const [request] = await makeRequests(chain, 1)
      await notified(request!.blockNumber)
      const header = tracking.recentHeaders.canonicalHeader(
        tracking.lastHead!,
        request!.blockNumber,
      )
      expect(header).toMatchObject({ noTransactions: false, hash: request!.blockHash })
      const { operator } = chain.dev.addresses
      expect(bloomMayHoldLog(header!.logsBloom!, [operator], [ORACLE_REQUEST_TOPIC])).toBe(true)
    } finally {
      await socket.destroy()
    }
  })
})
