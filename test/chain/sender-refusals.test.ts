import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { Queue } from 'bullmq'
import { Redis } from 'ioredis'
import { Wallet } from 'ethers'
import { ANVIL_PRIVATE_KEYS } from '../../src/dev/anvil.ts'
import { waitFor } from '../../src/dev/process.ts'
import { createTxSender, jobIdOf, type TxSubmission } from '../../src/chain/sender/index.ts'
import { createTxSigner } from '../../src/chain/sender/tx-signer.ts'
import { TxStore } from '../../src/chain/sender/tx-store.ts'
import { txStateKey } from '../../src/chain/sender/types.ts'
import { JsonRpcCallError } from '../../src/chain/sender/json-rpc-batch.ts'
import {
  isFatalRefusal,
  isToleratedRefusal,
  refusalOf,
} from '../../src/chain/sender/node-refusal.ts'
import { testRedisUrl, uniquePrefix } from '../support/redis.ts'
import { settlesWithin } from '../support/settles-within.ts'
import {
  consumerAt,
  fulfilUint256,
  makeRequests,
  rpc,
  startTestChain,
  type TestChain,
} from './support.ts'

const NODE_KEY = ANVIL_PRIVATE_KEYS[1]
const NODE = new Wallet(NODE_KEY).address

interface RpcTx {
  from: string
  to: string | null
  nonce: string
  value: string
  input: string
  hash: string
}

/** The key's mined transactions by nonce, from `fromBlock` on. */
async function minedByNonce(chain: TestChain, fromBlock: number): Promise<Map<number, RpcTx>> {
  const head = Number(await rpc<string>(chain.dev.provider, 'eth_blockNumber'))
  const byNonce = new Map<number, RpcTx>()
  for (let number = fromBlock; number <= head; number++) {
    const block = await rpc<{ transactions: RpcTx[] }>(chain.dev.provider, 'eth_getBlockByNumber', [
      `0x${number.toString(16)}`,
      true,
    ])
    for (const tx of block.transactions)
      if (tx.from.toLowerCase() === NODE.toLowerCase()) byNonce.set(Number(tx.nonce), tx)
  }
  return byNonce
}

function isFiller(tx: RpcTx | undefined): boolean {
  return (
    tx !== undefined &&
    tx.to?.toLowerCase() === NODE.toLowerCase() &&
    BigInt(tx.value) === 0n &&
    tx.input === '0x'
  )
}

const minedNonce = (chain: TestChain) =>
  rpc<string>(chain.dev.provider, 'eth_getTransactionCount', [NODE, 'latest']).then(Number)
const blockNumber = (chain: TestChain) =>
  rpc<string>(chain.dev.provider, 'eth_blockNumber').then(Number)

describe('node refusals (words of geth, besu, nethermind and anvil)', () => {
  it('tells bytes that can never be mined from refusals that may pass later', () => {
    for (const fatal of [
      'intrinsic gas too high -- tx.gas_limit > env.block.gas_limit', // anvil
      'exceeds block gas limit',
      'Transaction gas limit exceeds block gas limit',
      'intrinsic gas too low',
      'invalid chain id for signer',
      'GasLimitExceeded, Gas limit: 30000000, gas limit of rejected tx: 40000000',
      'tx fee (1.50 ether) exceeds the configured cap (1.00 ether)',
      'eth_sendRawTransaction: oversized data',
    ])
      expect(isFatalRefusal(fatal), fatal).toBe(true)
    for (const passing of [
      'Insufficient funds for gas * price + value',
      'txpool is full',
      'nonce too high',
      'fetch failed',
      'replacement transaction underpriced',
    ]) {
      expect(isFatalRefusal(passing), passing).toBe(false)
    }
    expect(isToleratedRefusal('already known')).toBe(true)
    expect(isToleratedRefusal('intrinsic gas too low')).toBe(false)
  })

  it("are read once, from the node's answer: later decisions read the error's refusal, not its words", () => {
    const refused = new JsonRpcCallError('eth_sendRawTransaction', 'exceeds block gas limit')
    expect(refused.kind).toBe('node_refused')
    expect(refusalOf(refused)).toBe('fatal')
    expect(refused.retryable).toBe(false)
    expect(refusalOf(new JsonRpcCallError('eth_sendRawTransaction', 'txpool is full'))).toBe(
      'transient',
    )
    // Not the node's answer (our own words quoting one): never fatal, whatever it says.
    expect(refusalOf(new Error('eth_sendRawTransaction: exceeds block gas limit'))).toBe(
      'transient',
    )
    expect(refusalOf(new Error('already known'))).toBe('transient')
  })
})

describe('transaction sender: transactions the node refuses', () => {
  let chain: TestChain
  let redis: Redis
  beforeAll(async () => {
    chain = await startTestChain()
    redis = new Redis(testRedisUrl())
  })
  afterAll(async () => {
    redis?.disconnect()
    await chain?.stop()
  })

  const senderOptions = (prefix: string) => ({
    rpcUrl: chain.anvil.rpcUrl,
    chainId: chain.dev.chainId,
    keys: [NODE_KEY],
    redisUrl: testRedisUrl(),
    prefix,
    pollIntervalMs: 20,
    bumpAfterBlocks: 2,
  })

  it("a transaction refused for good fails at once with the node's words, and its nonce goes to a filler so the transactions after it are mined", async () => {
    const [refusedRequest, ...later] = await makeRequests(chain, 3)
    const { gasLimit } = await rpc<{ gasLimit: string }>(
      chain.dev.provider,
      'eth_getBlockByNumber',
      ['latest', false],
    )
    const fromBlock = await blockNumber(chain)
    const nonce = await minedNonce(chain)
    const sender = createTxSender(senderOptions(uniquePrefix('refused')))
    const refused: TxSubmission = {
      to: chain.dev.addresses.operator,
      data: fulfilUint256(refusedRequest!, 1n),
      gasLimit: Number(BigInt(gasLimit) + 1_000_000n), // more gas than a block holds
      idempotencyKey: refusedRequest!.requestId,
    }
    try {
      await sender.start()
      const started = Date.now()
      await expect(sender.submit(refused)).rejects.toThrow(
        new RegExp(
          `refused the transaction for good: .*gas_limit > env\\.block\\.gas_limit.*its nonce ${nonce} went to a filler`,
        ),
      )
      // No retries: BullMQ's five attempts with back-off would take 7.5 s.
      expect(Date.now() - started).toBeLessThan(5_000)
      // Without the filler these would wait behind the unused nonce for good.
      const results = await settlesWithin(
        Promise.all(
          later.map((request, i) =>
            sender.submit({
              to: chain.dev.addresses.operator,
              data: fulfilUint256(request, BigInt(i + 10)),
              idempotencyKey: request.requestId,
            }),
          ),
        ),
        20_000,
      )
      expect(results).not.toBe('timed out')
      if (results === 'timed out') return
      expect(results.map((result) => [result.status, result.nonce])).toEqual([
        ['mined', nonce + 1],
        ['mined', nonce + 2],
      ])
      const mined = await minedByNonce(chain, fromBlock)
      expect(isFiller(mined.get(nonce))).toBe(true)
      expect(sender.stats()[0]!.filled).toBe(1)
      expect(await consumerAt(chain).getFunction('uint256Value')(later[1]!.requestId)).toBe(11n)

      // The same submission again joins the failed job: no second transaction, no second filler.
      await expect(sender.submit(refused)).rejects.toThrow(/refused the transaction for good/)
      expect(await minedNonce(chain)).toBe(nonce + 3)
      expect(sender.stats()[0]!.filled).toBe(1)
    } finally {
      await sender.close()
    }
  })

  it('a stalled key fills the nonce of a job that failed for good (no funds at the time) once transactions wait behind it', async () => {
    const [first, second] = await makeRequests(chain, 2)
    const provider = chain.dev.provider
    const balance = await rpc<string>(provider, 'eth_getBalance', [NODE, 'latest'])
    const fromBlock = await blockNumber(chain)
    const nonce = await minedNonce(chain)
    const sender = createTxSender(senderOptions(uniquePrefix('hole')))
    let miner: NodeJS.Timeout | undefined
    try {
      await sender.start()
      await rpc(provider, 'anvil_setBalance', [NODE, '0x0'])
      // Not a refusal for good: the job sends the same bytes again on each of its five attempts, then fails.
      await expect(
        sender.submit({
          to: chain.dev.addresses.operator,
          data: fulfilUint256(first!, 1n),
          idempotencyKey: first!.requestId,
        }),
      ).rejects.toThrow(/insufficient funds/i)
      await rpc(provider, 'anvil_setBalance', [NODE, balance])

      // The next transaction takes the nonce after the failed job's and waits in the pool behind it,
      // while blocks go by (a real chain makes them whether or not the key's transactions are in them).
      const waiting = sender.submit({
        to: chain.dev.addresses.operator,
        data: fulfilUint256(second!, 2n),
        idempotencyKey: second!.requestId,
      })
      miner = setInterval(() => void rpc(provider, 'evm_mine').catch(() => undefined), 100)
      const result = await settlesWithin(waiting, 20_000)
      expect(result).toMatchObject({ status: 'mined', nonce: nonce + 1 })
      const mined = await minedByNonce(chain, fromBlock)
      expect(isFiller(mined.get(nonce))).toBe(true)
      expect(sender.stats()[0]!.filled).toBe(1)
      expect(await consumerAt(chain).getFunction('uint256Value')(second!.requestId)).toBe(2n)
    } finally {
      clearInterval(miner)
      await rpc(provider, 'anvil_setBalance', [NODE, balance])
      await sender.close()
    }
  }, 40_000)

  it('a stalled key leaves a nonce whose job is still retrying alone, and fills it once that job is gone', async () => {
    const [held, waiting] = await makeRequests(chain, 2)
    const provider = chain.dev.provider
    const prefix = uniquePrefix('live-holder')
    const fromBlock = await blockNumber(chain)
    const nonce = await minedNonce(chain)
    const sender = createTxSender(senderOptions(prefix))
    // A job of the key that holds the next nonce and waits for its retry (as after a failed broadcast
    // in another process): queued for later, its nonce allocated, nothing sent.
    const queue = new Queue(sender.queueNames[0]!, { connection: redis, prefix })
    const heldJobId = jobIdOf(held!.requestId)
    const heldJob = await queue.add(
      'tx',
      { to: chain.dev.addresses.operator, data: fulfilUint256(held!, 1n) },
      { jobId: heldJobId, delay: 120_000 },
    )
    let miner: NodeJS.Timeout | undefined
    try {
      await sender.start()
      // After the start: a nonce held at start without a signed transaction is signed by the recovery.
      expect(
        await new TxStore(redis, txStateKey(prefix, chain.dev.chainId, NODE)).allocateNonce(
          heldJobId,
          nonce,
        ),
      ).toBe(nonce)
      const submitted = sender.submit({
        to: chain.dev.addresses.operator,
        data: fulfilUint256(waiting!, 2n),
        idempotencyKey: waiting!.requestId,
      })
      miner = setInterval(() => void rpc(provider, 'evm_mine').catch(() => undefined), 50)
      // Many times bumpAfterBlocks (2) go by: the nonce stays the retrying job's.
      const head = await blockNumber(chain)
      await waitFor('20 blocks', async () => (await blockNumber(chain)) >= head + 20, 10_000, 20)
      expect(await minedNonce(chain)).toBe(nonce)
      expect(sender.stats()[0]!.filled).toBe(0)
      await heldJob.remove()
      expect(await settlesWithin(submitted, 10_000)).toMatchObject({
        status: 'mined',
        nonce: nonce + 1,
      })
      expect(isFiller((await minedByNonce(chain, fromBlock)).get(nonce))).toBe(true)
      expect(sender.stats()[0]!.filled).toBe(1)
    } finally {
      clearInterval(miner)
      await sender.close()
      await queue.close()
    }
  })

  it('a sender whose store holds a transaction the node now refuses for good starts, and fills that nonce', async () => {
    const [request] = await makeRequests(chain, 1)
    const prefix = uniquePrefix('recover')
    const fromBlock = await blockNumber(chain)
    const nonce = await minedNonce(chain)
    const { gasLimit, baseFeePerGas } = await rpc<{ gasLimit: string; baseFeePerGas: string }>(
      chain.dev.provider,
      'eth_getBlockByNumber',
      ['latest', false],
    )
    // What a process that died after signing leaves behind: a nonce and an attempt the node will not take.
    const store = new TxStore(redis, txStateKey(prefix, chain.dev.chainId, NODE))
    expect(await store.allocateNonce('died-with-it', nonce)).toBe(nonce)
    const fees = {
      maxFeePerGas: BigInt(baseFeePerGas) * 2n + 10n ** 9n,
      maxPriorityFeePerGas: 10n ** 9n,
    }
    const signed = createTxSigner(NODE_KEY).sign({
      type: 2,
      chainId: chain.dev.chainId,
      nonce,
      to: chain.dev.addresses.operator,
      data: fulfilUint256(request!, 1n),
      gasLimit: BigInt(gasLimit) + 1n,
      ...fees,
    })
    await store.addAttempt('died-with-it', [
      {
        ...signed,
        maxFeePerGas: fees.maxFeePerGas.toString(),
        maxPriorityFeePerGas: fees.maxPriorityFeePerGas.toString(),
      },
    ])

    const errors: string[] = []
    const sender = createTxSender({
      ...senderOptions(prefix),
      onError: (error) => errors.push(error.message),
    })
    try {
      await sender.start()
      expect(errors.join('\n')).toMatch(/refused the transaction for good/)
      const result = await sender.submit({
        to: chain.dev.addresses.operator,
        data: fulfilUint256(request!, 3n),
        idempotencyKey: request!.requestId,
      })
      expect(result).toMatchObject({ status: 'mined', nonce: nonce + 1 })
      expect(isFiller((await minedByNonce(chain, fromBlock)).get(nonce))).toBe(true)
      // The filler's record is settled once it is mined: nothing is left for the next start.
      await waitFor(
        'no transaction in flight',
        async () => (await store.inflight()).length === 0,
        5_000,
        20,
      )
    } finally {
      await sender.close()
    }
  })
})
