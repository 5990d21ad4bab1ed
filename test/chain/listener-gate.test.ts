import { hexlify, randomBytes, type Contract, type JsonRpcProvider } from 'ethers'
import type { Redis } from 'ioredis'
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { createRequestListener, type RequestListener } from '../../src/chain/listener/index.ts'
import type { OracleRequestEvent } from '../../src/chain/operator.ts'
import { waitFor } from '../../src/dev/process.ts'
import { createRedisConnection } from '../../src/queue/connection.ts'
import { startJsonRpcTap, type JsonRpcTap } from '../support/json-rpc-tap.ts'
import { testRedisUrl, uniquePrefix } from '../support/redis.ts'
import {
  makeRequests,
  receiptOf,
  rpc,
  startTestChain,
  TEST_SPEC_ID,
  type TestChain,
} from './support.ts'

/** Every wait here is bounded only to catch a hang: a block comes every second. */
const HANG_MS = 60_000

type Transport = 'http' | 'ws'

/**
 * The listener's eth_getLogs bill on a chain that makes a block every second, behind a proxy that
 * records each call and each header it hands over: blocks whose headers show they cannot hold an
 * Operator's request are not read (no transaction; or a bloom without the Operator, once the chain
 * showed it fills its blooms), and requests still arrive. A chain whose blooms are all zero never has
 * its blooms trusted; a log that its block's bloom denies ends the trust for the listener's life.
 */
describe('the listener reads logs only for blocks that may hold a request (anvil --block-time 1)', () => {
  let chain: TestChain
  let provider: JsonRpcProvider
  let redis: Redis
  let tap: JsonRpcTap
  const listeners: RequestListener[] = []

  beforeAll(async () => {
    chain = await startTestChain({ blockTime: 1 })
    provider = chain.dev.provider as JsonRpcProvider
    redis = createRedisConnection(testRedisUrl(), 'worker')
  })
  beforeEach(async () => {
    tap = await startJsonRpcTap(chain.anvil)
  })
  afterEach(async () => {
    await Promise.all(listeners.splice(0).map((listener) => listener.stop()))
    await tap.stop()
  })
  afterAll(async () => {
    await redis?.quit()
    await chain?.stop()
  })

  const head = async () => Number(await rpc<string>(provider, 'eth_blockNumber'))

  /** A listener of the Operator through the tap, from the next block on. */
  async function listen(transport: Transport) {
    const requests: OracleRequestEvent[] = []
    const warnings: string[] = []
    const listener = createRequestListener({
      rpcUrl: transport === 'http' ? tap.httpUrl : tap.wsUrl,
      chainId: chain.dev.chainId,
      operators: [chain.dev.addresses.operator],
      specIds: new Map([[TEST_SPEC_ID, { minConfirmations: 1 }]]),
      redis,
      prefix: uniquePrefix('listener-gate'),
      pollIntervalMs: 50,
      fromBlock: (await head()) + 1,
      onRequest: (event) => void requests.push(event),
      log: { warn: (_, message) => void warnings.push(message), info: () => undefined },
    })
    listeners.push(listener)
    await listener.start()
    return { listener, requests, warnings }
  }

  /** Sends a transaction and waits until the listener has scanned its block; answers the block. */
  async function scannedBlockOf(listener: RequestListener, hash: string): Promise<number> {
    const block = Number((await receiptOf(provider, hash, HANG_MS)).blockNumber)
    await listener.whenScanned(block, HANG_MS)
    return block
  }

  /** A LinkToken Approval: a log in the block, none of the Operator's. */
  async function approve(listener: RequestListener): Promise<number> {
    const link = chain.dev.linkToken as Contract
    const tx = (await link.getFunction('approve')(hexlify(randomBytes(20)), 1n)) as { hash: string }
    return scannedBlockOf(listener, tx.hash)
  }

  /** A plain transfer: a transaction in the block, no log. */
  async function transfer(listener: RequestListener): Promise<number> {
    const to = hexlify(randomBytes(20))
    const tx = await chain.dev.deployer.sendTransaction({ to, value: 1n })
    return scannedBlockOf(listener, tx.hash)
  }

  async function requestDelivered(requests: OracleRequestEvent[]): Promise<OracleRequestEvent> {
    const [request] = await makeRequests(chain, 1)
    await waitFor(
      `request ${request!.requestId} delivered`,
      async () => requests.some((event) => event.requestId === request!.requestId),
      HANG_MS,
    )
    return request!
  }

  /** The block ranges of the eth_getLogs calls made through the tap since call `since`. */
  function logReads(since: number): Array<{ from: number; to: number }> {
    return tap.calls
      .slice(since)
      .filter((call) => call.method === 'eth_getLogs')
      .map((call) => {
        const filter = call.params[0] as {
          fromBlock?: string
          toBlock?: string
          blockHash?: string
        }
        // A range's last block is read by its hash (chain-reader.ts readRange).
        const byHash = filter.blockHash === undefined ? undefined : tap.blockOf(filter.blockHash)
        if (filter.blockHash !== undefined)
          return { from: byHash ?? Number.NaN, to: byHash ?? Number.NaN }
        return { from: Number(filter.fromBlock), to: Number(filter.toBlock) }
      })
  }

  const covers = (read: { from: number; to: number }, block: number) =>
    read.from <= block && block <= read.to

  it.each<Transport>(['http', 'ws'])(
    'over %s: no eth_getLogs for blocks without a transaction, or whose bloom has no Operator; a request is delivered',
    async (transport) => {
      // The listener starts on a block without logs (not one of the deployment's): while it is idle
      // it has seen no bloom with a bit set, and only the empty transaction lists spare the reads.
      await waitFor(
        'a block without a transaction',
        async () => {
          const latest = await rpc<{ transactions: unknown[] }>(provider, 'eth_getBlockByNumber', [
            'latest',
            false,
          ])
          return latest.transactions.length === 0
        },
        HANG_MS,
      )
      const since = tap.calls.length
      const { listener, requests, warnings } = await listen(transport)
      const idleFrom = (await head()) + 1
      await listener.whenScanned(idleFrom + 3, HANG_MS)
      const approved = await approve(listener)
      const transferred = await transfer(listener)
      const request = await requestDelivered(requests)
      const reads = logReads(since)
      // Each read covers the request's block, or a block whose header the listener never got (two
      // blocks between two polls): a block whose header it got and that cannot hold a request is
      // never read.
      const unseen = (read: { from: number; to: number }) =>
        Array.from({ length: read.to - read.from + 1 }, (_, at) => read.from + at).some(
          (block) => !tap.headersGiven.has(block),
        )
      for (const read of reads) expect(covers(read, request.blockNumber) || unseen(read)).toBe(true)
      expect(reads.some((read) => covers(read, request.blockNumber))).toBe(true)
      // Not by luck: the listener got the headers of the blocks it did not read.
      for (let block = idleFrom; block <= idleFrom + 3; block++)
        expect(tap.headersGiven.has(block)).toBe(true)
      expect(tap.headersGiven.has(approved)).toBe(true)
      expect(tap.headersGiven.has(transferred)).toBe(true)
      expect(warnings).toEqual([])
    },
    HANG_MS * 3,
  )

  it.each<Transport>(['http', 'ws'])(
    'over %s, on a chain whose blooms are all zero: requests are delivered, and a bloom proven wrong is never trusted again',
    async (transport) => {
      tap.zeroBlooms = true
      const since = tap.calls.length
      const { listener, requests, warnings } = await listen(transport)
      // The blooms never showed a bit: a block with a transaction is read, whatever its bloom says.
      const approvedZeroed = await approve(listener)
      expect(logReads(since).some((read) => covers(read, approvedZeroed))).toBe(true)
      await requestDelivered(requests)
      // The request's block's (zero) bloom denies the log eth_getLogs answered: one warning.
      expect(warnings).toHaveLength(1)
      expect(warnings[0]).toMatch(
        new RegExp(`^the logsBloom of block \\d+ of chain ${chain.dev.chainId} does not hold`),
      )
      expect(warnings[0]).toMatch(
        /point RPC_URL \(or the chain's endpoints in CHAINS_FILE\) at a node/,
      )
      // Real blooms from now on: the chain shows it fills them, but the listener does not trust them again.
      tap.zeroBlooms = false
      const approved = await approve(listener)
      expect(tap.headersGiven.has(approved)).toBe(true)
      expect(logReads(since).some((read) => covers(read, approved))).toBe(true)
      await requestDelivered(requests)
      expect(requests).toHaveLength(2)
      expect(warnings).toHaveLength(1)
    },
    HANG_MS * 3,
  )
  it(
    'blooms trusted, then found lying: the blocks skipped by them are read again, and the request they hid is delivered',
    async () => {
      // Blocks only when the test mines one: each holds exactly what the test put in it.
      await rpc(provider, 'evm_setIntervalMining', [0])
      try {
        const { listener, requests, warnings } = await listen('http')
        const inPool = () =>
          waitFor(
            'the transaction in the pool',
            async () =>
              Number((await rpc<{ pending: string }>(provider, 'txpool_status')).pending) > 0,
            HANG_MS,
          )
        const requestMined = async () => {
          const pending = makeRequests(chain, 1)
          await inPool()
          await rpc(provider, 'evm_mine')
          return (await pending)[0]!
        }
        const link = chain.dev.linkToken as Contract
        const approval = (await link.getFunction('approve')(hexlify(randomBytes(20)), 1n)) as {
          hash: string
        }
        await rpc(provider, 'evm_mine')
        // A bloom with bits set: the listener trusts this chain's blooms from now on (and skips this
        // block by its bloom, which has no Operator).
        const approved = await scannedBlockOf(listener, approval.hash)
        const since = tap.calls.length
        tap.zeroBlooms = true
        const hidden = await requestMined()
        await listener.whenScanned(hidden.blockNumber, HANG_MS)
        // Its block's (lying) bloom said no: not read, not delivered.
        expect(logReads(since).some((read) => covers(read, hidden.blockNumber))).toBe(false)
        expect(requests).toEqual([])
        // The next head the listener sees is two blocks up: the one between, whose header it never
        // got, is read, and with it the request of the head, whose bloom denies it.
        tap.holdHead = true
        await rpc(provider, 'evm_mine')
        const shown = await requestMined()
        tap.holdHead = false
        await waitFor('both requests delivered', async () => requests.length === 2, HANG_MS)
        expect(requests.map((event) => event.requestId).sort()).toEqual(
          [hidden.requestId, shown.requestId].sort(),
        )
        expect(warnings).toHaveLength(1)
        // Every block skipped by a bloom is read again: which blooms lied, the listener cannot tell.
        expect(warnings[0]).toContain(`read again from block ${approved} on`)
      } finally {
        tap.zeroBlooms = false
        tap.holdHead = false
        await rpc(provider, 'evm_setIntervalMining', [1])
      }
    },
    HANG_MS * 3,
  )
})
