import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { Wallet } from 'ethers'
import { ANVIL_PRIVATE_KEYS } from '../../src/dev/anvil.ts'
import { startOwnedProcess, waitFor } from '../../src/dev/process.ts'
import { createTxSender, type TxSender } from '../../src/chain/sender/index.ts'
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

describe('transaction sender on anvil (automine)', () => {
  let chain: TestChain
  let sender: TxSender

  beforeAll(async () => {
    chain = await startTestChain()
    sender = createTxSender({
      rpcUrl: chain.anvil.rpcUrl,
      chainId: chain.dev.chainId,
      keys: [NODE_KEY],
      redisUrl: testRedisUrl(),
      prefix: uniquePrefix('sender'),
      pollIntervalMs: 20,
    })
    await sender.start()
  })
  afterAll(async () => {
    await sender?.close()
    await chain?.stop()
  })

  it('sends 200 fulfilments from one key back to back: all mined, in nonce order, none reverted', async () => {
    const requests = await makeRequests(chain, 200)
    const startNonce = Number(
      await rpc<string>(chain.dev.provider, 'eth_getTransactionCount', [NODE, 'latest']),
    )
    const started = Date.now()
    const results = await Promise.all(
      requests.map((request, i) =>
        sender.submit({
          to: chain.dev.addresses.operator,
          data: fulfilUint256(request, BigInt(i + 1)),
          idempotencyKey: request.requestId,
        }),
      ),
    )
    const elapsedMs = Date.now() - started
    expect(results.map((result) => result.status)).toEqual(Array(200).fill('mined'))
    const nonces = results.map((result) => result.nonce as number).sort((a, b) => a - b)
    expect(nonces).toEqual(Array.from({ length: 200 }, (_, i) => startNonce + i))
    // Mined in nonce order: a higher nonce never sits in an earlier block.
    const byNonce = [...results].sort((a, b) => (a.nonce as number) - (b.nonce as number))
    for (let i = 1; i < byNonce.length; i++)
      expect(byNonce[i]!.blockNumber!).toBeGreaterThanOrEqual(byNonce[i - 1]!.blockNumber!)
    const receipts = await Promise.all(
      results.map((result) => receiptOf(chain.dev.provider, result.txHash as string)),
    )
    expect(receipts.every((receipt) => receipt.status === '0x1')).toBe(true)
    expect(
      Number(await rpc<string>(chain.dev.provider, 'eth_getTransactionCount', [NODE, 'latest'])),
    ).toBe(startNonce + 200)
    const consumer = consumerAt(chain)
    expect(await consumer.getFunction('uint256Value')(requests[199]!.requestId)).toBe(200n)
    console.log(`200 fulfilments in ${elapsedMs} ms (${Math.round(200_000 / elapsedMs)}/s)`)
  })

  it('does not send a second fulfilment of the same request', async () => {
    const [request] = await makeRequests(chain, 1)
    const data = fulfilUint256(request!, 7n)
    const first = await sender.submit({
      to: chain.dev.addresses.operator,
      data,
      idempotencyKey: request!.requestId,
    })
    expect(first.status).toBe('mined')
    const nonceAfterFirst = await rpc<string>(chain.dev.provider, 'eth_getTransactionCount', [
      NODE,
      'latest',
    ])

    // The same idempotency key joins the finished job; a new key that asks for a simulation is stopped by it.
    const joined = await sender.submit({
      to: chain.dev.addresses.operator,
      data,
      idempotencyKey: request!.requestId,
    })
    expect(joined).toEqual(first)
    const again = await sender.submit({
      to: chain.dev.addresses.operator,
      data,
      idempotencyKey: `${request!.requestId}-retry`,
      simulate: true,
    })
    expect(again.status).toBe('already-fulfilled')
    expect(again.reason).toContain('Must have a valid requestId')
    expect(again.txHash).toBeUndefined()
    expect(await rpc<string>(chain.dev.provider, 'eth_getTransactionCount', [NODE, 'latest'])).toBe(
      nonceAfterFirst,
    )
  })

  it('reports a simulated revert with its decoded reason and sends nothing', async () => {
    const [request] = await makeRequests(chain, 1)
    const wrongPayment = fulfilUint256({ ...request!, payment: request!.payment + 1n }, 1n)
    const result = await sender.submit({
      to: chain.dev.addresses.operator,
      data: wrongPayment,
      idempotencyKey: `${request!.requestId}-bad`,
      simulate: true,
    })
    expect(result).toMatchObject({ status: 'reverted', reason: 'Params do not match request ID' })
    expect(result.txHash).toBeUndefined()
  })

  it('without a simulation, sends a fulfilment that reverts and reports the decoded reason from the mined transaction', async () => {
    const [request] = await makeRequests(chain, 1)
    const wrongPayment = fulfilUint256({ ...request!, payment: request!.payment + 1n }, 1n)
    const nonce = Number(
      await rpc<string>(chain.dev.provider, 'eth_getTransactionCount', [NODE, 'latest']),
    )
    const result = await sender.submit({
      to: chain.dev.addresses.operator,
      data: wrongPayment,
      idempotencyKey: `${request!.requestId}-unsimulated`,
    })
    expect(result).toMatchObject({
      status: 'reverted',
      reason: 'Params do not match request ID',
      nonce,
    })
    expect((await receiptOf(chain.dev.provider, result.txHash!)).status).toBe('0x0')
    expect(
      Number(await rpc<string>(chain.dev.provider, 'eth_getTransactionCount', [NODE, 'latest'])),
    ).toBe(nonce + 1)
  })
})

describe('transaction sender: several keys, stuck transactions and crashes', () => {
  let chain: TestChain
  beforeAll(async () => {
    // ANVIL_PRIVATE_KEYS[2] and [5] in src/dev/anvil.ts are not anvil's keys (typos): [3] is.
    chain = await startTestChain({}, [NODE_KEY, ANVIL_PRIVATE_KEYS[3]])
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
      expect(sender.queueNames).toEqual(
        sender.addresses.map((address) => `tx-${chain.dev.chainId}-${address.toLowerCase()}`),
      )
    } finally {
      await sender.close()
    }
  })
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
          simulate: true,
        }),
        sender.submit({
          to: chain.dev.addresses.operator,
          data,
          idempotencyKey: `${request!.requestId}-b`,
          simulate: true,
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

  it('a resubmit of a transaction whose job failed for good runs it again; a first submission joins the failed job', async () => {
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
    })
    try {
      await sender.start()
      const failed = await sender.submit(submission).then(
        () => 'mined',
        (error: Error) => error.message,
      )
      expect(failed).toMatch(/gas/i)
      await rpc(provider, 'evm_setBlockGasLimit', [`0x${(blockGasLimit * 2n).toString(16)}`])
      // A first submission (not a resubmit) joins the job as it is, failed.
      await expect(sender.submit(submission)).rejects.toThrow(/gas/i)
      // The refused transaction's nonce went to a filler (test/chain/sender-refusals.test.ts): the
      // job starts over with the next one.
      expect(await sender.submit({ ...submission, resubmit: true })).toMatchObject({
        status: 'mined',
        nonce: nonce + 1,
      })
      expect(await consumerAt(chain).getFunction('uint256Value')(request!.requestId)).toBe(9n)
    } finally {
      await rpc(provider, 'evm_setBlockGasLimit', [`0x${blockGasLimit.toString(16)}`])
      await sender.close()
    }
  }, 60_000)

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
    try {
      await first.start()
      void first.submit(submission).catch(() => undefined)
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

  it('a sender killed mid-batch and restarted finishes the batch with no nonce gap and no duplicate', async () => {
    const provider = chain.dev.provider
    const count = 200
    const prefix = uniquePrefix('kill')
    const requests = await makeRequests(chain, count)
    const startNonce = Number(
      await rpc<string>(provider, 'eth_getTransactionCount', [NODE, 'latest']),
    )
    const startBlock = Number(await rpc<string>(provider, 'eth_blockNumber'))
    const env = {
      ...process.env,
      RPC_URL: chain.anvil.rpcUrl,
      CHAIN_ID: String(chain.dev.chainId),
      REDIS_URL: testRedisUrl(),
      PREFIX: prefix,
      SENDER_KEY: NODE_KEY,
    }
    const startWorker = () =>
      startOwnedProcess(
        'sender-worker',
        process.execPath,
        ['--import', 'tsx', 'test/chain/fixtures/sender-worker.ts'],
        { env },
      )
    // This process only submits; the worker runs in the child.
    const submitter = createTxSender({
      rpcUrl: chain.anvil.rpcUrl,
      chainId: chain.dev.chainId,
      keys: [NODE_KEY],
      redisUrl: testRedisUrl(),
      prefix,
    })
    let worker = startWorker()
    try {
      const results = Promise.all(
        requests.map((request, i) =>
          submitter.submit({
            to: chain.dev.addresses.operator,
            data: fulfilUint256(request, BigInt(i + 1)),
            idempotencyKey: request.requestId,
          }),
        ),
      )
      results.catch(() => undefined) // awaited below; this only keeps an early failure from going unhandled
      await waitFor(
        'the first 40 fulfilments',
        async () =>
          Number(await rpc<string>(provider, 'eth_getTransactionCount', [NODE, 'latest'])) >=
          startNonce + 40,
        30_000,
        10,
      )
      await worker.stop('SIGKILL')
      const minedAtKill =
        Number(await rpc<string>(provider, 'eth_getTransactionCount', [NODE, 'latest'])) -
        startNonce
      expect(minedAtKill).toBeLessThan(count)
      worker = startWorker()
      const finished = await results
      expect(finished.every((result) => result.status === 'mined')).toBe(true)

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
      console.log(`killed after ${minedAtKill} of ${count} mined; finished after restart`)
    } finally {
      await worker.stop()
      await submitter.close()
    }
  })
})
