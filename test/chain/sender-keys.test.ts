import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { Wallet } from 'ethers'
import { ANVIL_PRIVATE_KEYS } from '../../src/dev/anvil.ts'
import { waitFor } from '../../src/dev/process.ts'
import { createTxSender } from '../../src/chain/sender/index.ts'
import { testRedisUrl, uniquePrefix } from '../support/redis.ts'
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

describe('transaction sender: several keys and stuck transactions', () => {
  let chain: TestChain
  beforeAll(async () => {
    // Two authorised node keys: anvil's accounts 1 and 3.
    chain = await startTestChain({}, [NODE_KEY, ANVIL_PRIVATE_KEYS[3]], { poolBackstop: true })
  })

  it('shares the load between several authorised keys, each with its own nonce sequence', async () => {
    const provider = chain.dev.provider
    const keys = [NODE_KEY, ANVIL_PRIVATE_KEYS[3]]
    const sender = createTxSender({
      rpcUrl: chain.anvil.rpcUrl,
      chainId: chain.dev.chainId,
      keys,
      redisUrl: testRedisUrl(),
      prefix: uniquePrefix('pool'),
      pollIntervalMs: 20,
    })
    try {
      await sender.start()
      const requests = await makeRequests(chain, 40)
      const results = await Promise.all(
        requests.map((request, i) =>
          sender.submit({
            to: chain.dev.addresses.operator,
            data: fulfilUint256(request, BigInt(i)),
            idempotencyKey: request.requestId,
          }),
        ),
      )
      expect(results.every((result) => result.status === 'mined')).toBe(true)
      for (const address of sender.addresses) {
        const own = results
          .filter((result) => result.from === address)
          .map((result) => result.nonce as number)
          .sort((a, b) => a - b)
        // Both keys took a share, and each key's nonces are consecutive.
        expect(own.length).toBeGreaterThan(5)
        expect(own).toEqual(Array.from({ length: own.length }, (_, i) => own[0]! + i))
        expect(
          Number(await rpc<string>(provider, 'eth_getTransactionCount', [address, 'latest'])),
        ).toBe(own.at(-1)! + 1)
      }
      // One process alone owns both keys.
      expect(sender.ownership()).toMatchObject({ available: 2, owned: 2, lostLeases: 0 })
    } finally {
      await sender.close()
    }
  }, 180_000)
  afterAll(async () => {
    await chain?.stop()
  })

  it('a stalled key re-sends only its lowest unmined nonce: the transactions behind a gap are not bumped', async () => {
    const provider = chain.dev.provider
    const requests = await makeRequests(chain, 3)
    const sender = createTxSender({
      rpcUrl: chain.anvil.rpcUrl,
      chainId: chain.dev.chainId,
      keys: [NODE_KEY],
      redisUrl: testRedisUrl(),
      prefix: uniquePrefix('gap'),
      pollIntervalMs: 20,
      // A fresh prefix on keys the cases before used: its new owner waits out one lease.
      keyLeaseMs: 2_000,
      bumpAfterBlocks: 2,
    })
    await rpc(provider, 'evm_setAutomine', [false])
    let miner: NodeJS.Timeout | undefined
    try {
      await sender.start()
      const nonce = Number(await rpc<string>(provider, 'eth_getTransactionCount', [NODE, 'latest']))
      const submitted = requests.map((request, i) =>
        sender.submit({
          to: chain.dev.addresses.operator,
          data: fulfilUint256(request, BigInt(i + 1)),
          idempotencyKey: request.requestId,
        }),
      )
      await waitFor(
        'three transactions in the pool',
        async () =>
          Number(await rpc<string>(provider, 'eth_getTransactionCount', [NODE, 'pending'])) ===
          nonce + 3,
        10_000,
        10,
      )
      // The lowest nonce disappears from the pool (as a node that restarted would lose it): a gap.
      const pool = await rpc<{ pending: Record<string, Record<string, { hash: string }>> }>(
        provider,
        'txpool_content',
      )
      const own =
        Object.entries(pool.pending).find(
          ([address]) => address.toLowerCase() === NODE.toLowerCase(),
        )?.[1] ?? {}
      const byNonce = new Map(Object.entries(own).map(([n, tx]) => [Number(n), tx.hash]))
      // anvil drops the transactions behind a dropped one too; the node keeps those two, waiting.
      const behindRaw = await Promise.all(
        [nonce + 1, nonce + 2].map((n) =>
          rpc<string>(provider, 'eth_getRawTransactionByHash', [byNonce.get(n)]),
        ),
      )
      await rpc(provider, 'anvil_dropTransaction', [byNonce.get(nonce)])
      for (const raw of behindRaw) await rpc(provider, 'eth_sendRawTransaction', [raw])
      expect(
        Number(await rpc<string>(provider, 'eth_getTransactionCount', [NODE, 'pending'])),
      ).toBe(nonce)
      miner = setInterval(() => void rpc(provider, 'evm_mine').catch(() => undefined), 100)
      const results = await Promise.all(submitted)
      expect(results.map((result) => result.status)).toEqual(['mined', 'mined', 'mined'])
      expect(results.map((result) => result.nonce).sort()).toEqual([nonce, nonce + 1, nonce + 2])
      expect(sender.stats()[0]!.bumped).toBe(1)
      // The two behind the gap were mined as first signed.
      const behind = results
        .filter((result) => result.nonce !== nonce)
        .map((result) => result.txHash)
      expect(behind.sort()).toEqual([byNonce.get(nonce + 1), byNonce.get(nonce + 2)].sort())
    } finally {
      clearInterval(miner)
      await sender.close()
      await rpc(provider, 'evm_setAutomine', [true])
      await rpc(provider, 'evm_mine')
    }
  })

  it('re-sends a transaction stuck under a too-low fee with the same nonce and higher fees', async () => {
    const provider = chain.dev.provider
    const [request] = await makeRequests(chain, 1)
    const sender = createTxSender({
      rpcUrl: chain.anvil.rpcUrl,
      chainId: chain.dev.chainId,
      keys: [NODE_KEY],
      redisUrl: testRedisUrl(),
      prefix: uniquePrefix('bump'),
      pollIntervalMs: 20,
      // A fresh prefix on keys the cases before used: its new owner waits out one lease.
      keyLeaseMs: 2_000,
      bumpAfterBlocks: 2,
      confirmations: 2,
    })
    // Once the transaction is out, blocks come from this test's own miner, every 100 ms.
    await rpc(provider, 'evm_setAutomine', [false])
    let miner: NodeJS.Timeout | undefined
    try {
      await sender.start()
      const nonce = Number(await rpc<string>(provider, 'eth_getTransactionCount', [NODE, 'latest']))
      const latest = await rpc<{ baseFeePerGas: string }>(provider, 'eth_getBlockByNumber', [
        'latest',
        false,
      ])
      const submitted = sender.submit({
        to: chain.dev.addresses.operator,
        data: fulfilUint256(request!, 42n),
        idempotencyKey: request!.requestId,
      })
      await waitFor(
        'the transaction in the pool',
        async () =>
          Number(await rpc<string>(provider, 'eth_getTransactionCount', [NODE, 'pending'])) > nonce,
        10_000,
        10,
      )
      // The fee market jumps after it was priced and sent: the next blocks cost 1,000 gwei (anvil's
      // base fee has decayed far below 1 gwei by now, so the transaction's tip alone would still fit 100x).
      await rpc(provider, 'anvil_setNextBlockBaseFeePerGas', [
        `0x${(1_000n * 10n ** 9n).toString(16)}`,
      ])
      miner = setInterval(() => void rpc(provider, 'evm_mine').catch(() => undefined), 100)
      const result = await submitted
      expect(result).toMatchObject({ status: 'mined', nonce })
      expect(sender.stats()[0]!.bumped).toBeGreaterThanOrEqual(1)
      const mined = await provider.getTransaction(result.txHash as string)
      expect(mined!.maxFeePerGas!).toBeGreaterThan((BigInt(latest.baseFeePerGas) * 2n * 12n) / 10n)
      expect(Number(await rpc<string>(provider, 'eth_getTransactionCount', [NODE, 'latest']))).toBe(
        nonce + 1,
      )
      expect(await consumerAt(chain).getFunction('uint256Value')(request!.requestId)).toBe(42n)
    } finally {
      clearInterval(miner)
      await sender.close()
      await rpc(provider, 'anvil_setNextBlockBaseFeePerGas', ['0x3b9aca00'])
      await rpc(provider, 'evm_setAutomine', [true])
      await rpc(provider, 'evm_mine')
    }
  })

  it('a fulfilment that reverts on chain reports the decoded reason', async () => {
    const provider = chain.dev.provider
    const [request] = await makeRequests(chain, 1)
    const sender = createTxSender({
      rpcUrl: chain.anvil.rpcUrl,
      chainId: chain.dev.chainId,
      keys: [NODE_KEY],
      redisUrl: testRedisUrl(),
      prefix: uniquePrefix('revert'),
      pollIntervalMs: 20,
      // A fresh prefix on keys the cases before used: its new owner waits out one lease.
      keyLeaseMs: 2_000,
    })
    const data = fulfilUint256(request!, 5n)
    try {
      await sender.start()
      const nonce = Number(await rpc<string>(provider, 'eth_getTransactionCount', [NODE, 'latest']))
      // Two different idempotency keys for one request, both simulated before either is mined: the
      // second passes its simulation, reaches the chain and reverts there (the runner never does this;
      // it uses one key per request).
      await rpc(provider, 'evm_setAutomine', [false])
      const both = [
        sender.submit({
          to: chain.dev.addresses.operator,
          data,
          idempotencyKey: `${request!.requestId}-a`,
        }),
        sender.submit({
          to: chain.dev.addresses.operator,
          data,
          idempotencyKey: `${request!.requestId}-b`,
        }),
      ]
      await waitFor(
        'both transactions in the pool',
        async () =>
          Number(await rpc<string>(provider, 'eth_getTransactionCount', [NODE, 'pending'])) >=
          nonce + 2,
        10_000,
        10,
      )
      await rpc(provider, 'evm_mine')
      const results = await Promise.all(both)
      expect(results.map((result) => result.status).sort()).toEqual(['mined', 'reverted'])
      const reverted = results.find((result) => result.status === 'reverted')!
      expect(reverted.reason).toBe('Must have a valid requestId')
      expect(reverted.txHash).toMatch(/^0x[0-9a-f]{64}$/)
      expect((await receiptOf(provider, reverted.txHash!)).status).toBe('0x0')
      expect(sender.stats()[0]!.reverted).toBe(1)
    } finally {
      await rpc(provider, 'evm_setAutomine', [true])
      await sender.close()
    }
  })

  it('a job whose transaction the node refused for good starts over when it is submitted again', async () => {
    const provider = chain.dev.provider
    const [request] = await makeRequests(chain, 1)
    const latest = await rpc<{ gasLimit: string }>(provider, 'eth_getBlockByNumber', [
      'latest',
      false,
    ])
    const blockGasLimit = BigInt(latest.gasLimit)
    // More gas than a block holds: the node refuses the transaction, every attempt of the job fails.
    const submission = {
      to: chain.dev.addresses.operator,
      data: fulfilUint256(request!, 9n),
      gasLimit: Number(blockGasLimit + 1_000_000n),
      idempotencyKey: `${request!.requestId}-too-big`,
    }
    const nonce = Number(await rpc<string>(provider, 'eth_getTransactionCount', [NODE, 'latest']))
    const sender = createTxSender({
      rpcUrl: chain.anvil.rpcUrl,
      chainId: chain.dev.chainId,
      keys: [NODE_KEY],
      redisUrl: testRedisUrl(),
      prefix: uniquePrefix('resubmit'),
      pollIntervalMs: 20,
      // A fresh prefix on keys the cases before used: its new owner waits out one lease.
      keyLeaseMs: 2_000,
    })
    try {
      await sender.start()
      const failed = await sender.submit(submission).then(
        () => 'mined',
        (error: Error) => error.message,
      )
      expect(failed).toMatch(/gas/i)
      // The filler is mined before the limit moves, and the limit is in a mined block before the job
      // goes again: anvil sets it on the block it builds next, so a block mined meanwhile must not
      // decide which limit the second attempt meets.
      await waitFor(
        'the filler mined',
        async () => {
          const count = await rpc<string>(provider, 'eth_getTransactionCount', [NODE, 'latest'])
          return Number(count) > nonce
        },
        60_000,
      )
      const raised = blockGasLimit * 2n
      await rpc(provider, 'evm_setBlockGasLimit', [`0x${raised.toString(16)}`])
      await rpc(provider, 'evm_mine', [])
      const mined = await rpc<{ gasLimit: string }>(provider, 'eth_getBlockByNumber', [
        'latest',
        false,
      ])
      expect(BigInt(mined.gasLimit)).toBe(raised)
      // The refused transaction's nonce went to a filler (test/chain/sender-refusals.test.ts) and its
      // record with it: the job starts over with the next nonce.
      expect(await sender.submit(submission)).toMatchObject({
        status: 'mined',
        nonce: nonce + 1,
      })
      expect(await consumerAt(chain).getFunction('uint256Value')(request!.requestId)).toBe(9n)
    } finally {
      await rpc(provider, 'evm_setBlockGasLimit', [`0x${blockGasLimit.toString(16)}`])
      await sender.close()
    }
  }, 120_000)
})
