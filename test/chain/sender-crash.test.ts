import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { Wallet } from 'ethers'
import { Redis } from 'ioredis'
import { ANVIL_PRIVATE_KEYS } from '../../src/dev/anvil.ts'
import { startOwnedProcess, waitFor } from '../../src/dev/process.ts'
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import {
  createTxSender,
  type TxResult,
  type TxSender,
  type TxSubmission,
} from '../../src/chain/sender/index.ts'
import { ownerKey } from '../../src/chain/sender/ownership/key-leases.ts'
import { txStateBase } from '../../src/chain/sender/types.ts'
import { errorKindOf } from '../../src/config/errors.ts'
import { startJsonRpcTap } from '../support/json-rpc-tap.ts'
import { testRedisUrl, uniquePrefix } from '../support/redis.ts'
import { settlesWithin } from '../support/settles-within.ts'
import {
  consumerAt,
  fulfilUint256,
  makeRequests,
  receiptOf,
  rpc,
  startTestChain,
  type TestChain,
} from './support.ts'

const NODE_KEY = ANVIL_PRIVATE_KEYS[1]
const NODE = new Wallet(NODE_KEY).address

describe('transaction sender: closing and crashes', () => {
  let chain: TestChain
  beforeAll(async () => {
    // Two authorised node keys: anvil's accounts 1 and 3.
    chain = await startTestChain({}, [NODE_KEY, ANVIL_PRIVATE_KEYS[3]], { poolBackstop: true })
  })

  afterAll(async () => {
    await chain?.stop()
  })

  it('closes within its close timeout while a receipt does not come, and a sender started later finds that transaction mined, sent once', async () => {
    const provider = chain.dev.provider
    const [request] = await makeRequests(chain, 1)
    const options = {
      rpcUrl: chain.anvil.rpcUrl,
      chainId: chain.dev.chainId,
      keys: [NODE_KEY],
      redisUrl: testRedisUrl(),
      prefix: uniquePrefix('close'),
      pollIntervalMs: 20,
    }
    const submission = {
      to: chain.dev.addresses.operator,
      data: fulfilUint256(request!, 7n),
      idempotencyKey: request!.requestId,
    }
    const nonce = Number(await rpc<string>(provider, 'eth_getTransactionCount', [NODE, 'latest']))
    const first = createTxSender({ ...options, closeTimeoutMs: 500 })
    await rpc(provider, 'evm_setAutomine', [false])
    let waiter: Promise<unknown> = Promise.resolve()
    try {
      await first.start()
      waiter = first.submit(submission).then(
        () => 'mined',
        (error: Error) => error.name,
      )
      await waitFor(
        'the transaction in the pool',
        async () =>
          Number(await rpc<string>(provider, 'eth_getTransactionCount', [NODE, 'pending'])) > nonce,
        10_000,
        10,
      )
      expect(
        await settlesWithin(
          first.close().then(() => 'closed'),
          5_000,
        ),
      ).toBe('closed')
      // Its waiter settled: told its transaction went to the key's next owner.
      expect(await settlesWithin(waiter, 1_000)).toBe('HandedOverError')
    } finally {
      await rpc(provider, 'evm_setAutomine', [true])
      await rpc(provider, 'evm_mine')
    }
    const second = createTxSender(options)
    try {
      await second.start()
      expect(await second.submit(submission)).toMatchObject({ status: 'mined', nonce })
      expect(Number(await rpc<string>(provider, 'eth_getTransactionCount', [NODE, 'latest']))).toBe(
        nonce + 1,
      )
      expect(await consumerAt(chain).getFunction('uint256Value')(request!.requestId)).toBe(7n)
    } finally {
      await second.close()
    }
  })

  it('a key it took while the pool held its transactions (Redis knew nothing of them), lost meanwhile: the wait for the pool ends, without a failed take-over', async () => {
    const provider = chain.dev.provider
    const errors: Error[] = []
    const tap = await startJsonRpcTap(chain.anvil)
    const redis = new Redis(testRedisUrl())
    const prefix = uniquePrefix('lost-pool')
    await rpc(provider, 'evm_setAutomine', [false])
    let sender: TxSender | undefined
    try {
      // One of the key's transactions in the node's pool, of which Redis (a new prefix) knows nothing.
      await new Wallet(NODE_KEY, provider).sendTransaction({ to: NODE, value: 0n })
      sender = createTxSender({
        rpcUrl: tap.httpUrl,
        chainId: chain.dev.chainId,
        keys: [NODE_KEY],
        redisUrl: testRedisUrl(),
        prefix,
        pollIntervalMs: 20,
        keyLeaseMs: 3_000,
        // Far past the test's own time limit: only losing the key ends the wait.
        drainBoundMs: 600_000,
        onError: (error) => errors.push(error),
      })
      await sender.start()
      const reads = () =>
        tap.calls.filter((call) => call.method === 'eth_getTransactionCount').length
      const readsAtStart = reads()
      await waitFor('the recovery reading the pool', async () => reads() > readsAtStart, 30_000)
      expect(sender.ownership()).toMatchObject({ owned: 1, available: 0 })
      // Another owner's lease in its place: the next renewal finds the key taken.
      const owner = ownerKey(txStateBase(prefix, chain.dev.chainId), NODE)
      await redis.set(owner, 'another-process:1', 'PX', 600_000)
      await waitFor('the lease lost', async () => sender!.ownership().lostLeases === 1, 30_000)
      // Its wait read the pool every 20 ms; once the key is lost it reads no more (one read may have
      // been under way).
      const readsAtLoss = reads()
      await new Promise((resolve) => setTimeout(resolve, 1_000))
      expect(reads() - readsAtLoss).toBeLessThanOrEqual(2)
      expect(errors.map((error) => error.message)).toEqual([])
    } finally {
      await sender?.close()
      await rpc(provider, 'evm_mine', [])
      await rpc(provider, 'evm_setAutomine', [true])
      const keys = await redis.keys(`${prefix}:*`)
      if (keys.length > 0) await redis.del(...keys)
      redis.disconnect()
      await tap.stop()
    }
  })

  it('a key owner killed mid-batch: the next owner takes the key once its lease ran out and finishes the batch, no nonce gap, no duplicate', async () => {
    const provider = chain.dev.provider
    const count = 200
    const prefix = uniquePrefix('kill')
    const requests = await makeRequests(chain, count)
    const submissions = requests.map((request, i) => ({
      to: chain.dev.addresses.operator,
      data: fulfilUint256(request, BigInt(i + 1)),
      idempotencyKey: request.requestId,
    }))
    const requestsFile = join(mkdtempSync(join(tmpdir(), 'sender-kill-')), 'requests.json')
    writeFileSync(requestsFile, JSON.stringify(submissions))
    const startNonce = Number(
      await rpc<string>(provider, 'eth_getTransactionCount', [NODE, 'latest']),
    )
    const startBlock = Number(await rpc<string>(provider, 'eth_blockNumber'))
    const owner = startOwnedProcess(
      'sender-worker',
      process.execPath,
      ['--import', 'tsx', 'test/chain/fixtures/sender-worker.ts'],
      {
        env: {
          ...process.env,
          RPC_URL: chain.anvil.rpcUrl,
          CHAIN_ID: String(chain.dev.chainId),
          REDIS_URL: testRedisUrl(),
          PREFIX: prefix,
          SENDER_KEY: NODE_KEY,
          REQUESTS_FILE: requestsFile,
        },
      },
    )
    // This process stands by: the child owns the key.
    const next = createTxSender({
      rpcUrl: chain.anvil.rpcUrl,
      chainId: chain.dev.chainId,
      keys: [NODE_KEY],
      redisUrl: testRedisUrl(),
      prefix,
      pollIntervalMs: 20,
      keyLeaseMs: 2_000,
    })
    try {
      await waitFor(
        'the child owns the key',
        async () => /owns 1 key/.test(owner.output()),
        30_000,
        20,
      )
      await next.start()
      expect(next.ownership().owned).toBe(0)
      await waitFor(
        'the first 40 fulfilments',
        async () =>
          Number(await rpc<string>(provider, 'eth_getTransactionCount', [NODE, 'latest'])) >=
          startNonce + 40,
        30_000,
        10,
      )
      await owner.stop('SIGKILL')
      const minedAtKill =
        Number(await rpc<string>(provider, 'eth_getTransactionCount', [NODE, 'latest'])) -
        startNonce
      expect(minedAtKill).toBeLessThan(count)
      // Every run is tried again here, as the queue hands a dead process's requests to another: a
      // job with a transaction waits for the key's next owner (this process, once the lease ran
      // out), one without any is sent once this process owns the key.
      const finished = await Promise.all(
        submissions.map((submission) => submitUntilOwned(next, submission)),
      )
      expect(finished.every((result) => result.status === 'mined')).toBe(true)
      expect(next.ownership()).toMatchObject({ owned: 1 })

      // On chain: exactly `count` transactions from the key, consecutive nonces, none reverted, one answer per request.
      const endNonce = Number(
        await rpc<string>(provider, 'eth_getTransactionCount', [NODE, 'latest']),
      )
      expect(endNonce - startNonce).toBe(count)
      const head = Number(await rpc<string>(provider, 'eth_blockNumber'))
      const sent: Array<{ nonce: number; hash: string }> = []
      for (let number = startBlock + 1; number <= head; number++) {
        const block = await rpc<{
          transactions: Array<{ from: string; nonce: string; hash: string }>
        }>(provider, 'eth_getBlockByNumber', [`0x${number.toString(16)}`, true])
        for (const tx of block.transactions)
          if (tx.from.toLowerCase() === NODE.toLowerCase())
            sent.push({ nonce: Number(tx.nonce), hash: tx.hash })
      }
      expect(sent.map((tx) => tx.nonce)).toEqual(
        Array.from({ length: count }, (_, i) => startNonce + i),
      )
      const receipts = await Promise.all(sent.map((tx) => receiptOf(provider, tx.hash)))
      expect(receipts.filter((receipt) => receipt.status !== '0x1')).toHaveLength(0)
      const consumer = consumerAt(chain)
      const values = await Promise.all(
        requests.map(
          (request) => consumer.getFunction('uint256Value')(request.requestId) as Promise<bigint>,
        ),
      )
      expect(values).toEqual(requests.map((_, i) => BigInt(i + 1)))
      console.log(`killed after ${minedAtKill} of ${count} mined; finished by the next owner`)
    } finally {
      await owner.stop()
      await next.close()
    }
    // 400 transactions and two sender processes: a bound for hangs, not for a loaded machine's speed.
  }, 300_000)
})

/** Submits until a key is owned here (as a run goes back to its queue while none is). */
async function submitUntilOwned(sender: TxSender, submission: TxSubmission): Promise<TxResult> {
  for (let tries = 0; ; tries++) {
    try {
      return await sender.submit(submission)
    } catch (error) {
      if (errorKindOf(error) !== 'unavailable' || tries > 600) throw error
      await new Promise((resolve) => setTimeout(resolve, 100))
    }
  }
}
