import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { Redis } from 'ioredis'
import { Wallet } from 'ethers'
import { ANVIL_PRIVATE_KEYS } from '../../src/dev/anvil.ts'
import { waitFor } from '../../src/dev/process.ts'
import { createTxSender, txStateBase, type TxSubmission } from '../../src/chain/sender/index.ts'
import { createTxSigner } from '../../src/chain/sender/tx-signer.ts'
import { TxStore } from '../../src/chain/sender/tx-store.ts'
import { ownerKey } from '../../src/chain/sender/ownership/key-leases.ts'
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
    // Each case starts on a fresh prefix with a key the cases before used: a new owner of a used key
    // Redis holds nothing of waits out one lease (key-recovery.ts).
    keyLeaseMs: 2_000,
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
      // Not retried: the same bytes can never be taken.
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

      // The job's record went with its nonce: the same submission again starts over (and is refused
      // again, its nonce filled again), with nothing left waiting behind it.
      await expect(sender.submit(refused)).rejects.toThrow(/refused the transaction for good/)
      await waitFor(
        'the second filler mined',
        async () => (await minedNonce(chain)) === nonce + 4,
        20_000,
        20,
      )
      expect(sender.stats()[0]!.filled).toBe(2)
    } finally {
      await sender.close()
    }
  })

  it('a transaction the node does not take now (no funds) stays watched and is sent again once it can be, with the one behind it', async () => {
    const [first, second] = await makeRequests(chain, 2)
    const provider = chain.dev.provider
    const balance = await rpc<string>(provider, 'eth_getBalance', [NODE, 'latest'])
    const nonce = await minedNonce(chain)
    const errors: string[] = []
    const causes: unknown[] = []
    const sender = createTxSender({
      ...senderOptions(uniquePrefix('no-funds')),
      resendAfterMs: 200,
      onError: (error) => {
        errors.push(error.message)
        causes.push(error.cause)
      },
    })
    try {
      await sender.start()
      await rpc(provider, 'anvil_setBalance', [NODE, '0x0'])
      const firstSent = sender.submit({
        to: chain.dev.addresses.operator,
        data: fulfilUint256(first!, 1n),
        idempotencyKey: first!.requestId,
      })
      await waitFor(
        'the refusal told',
        async () => errors.some((e) => /insufficient funds/i.test(e)),
        10_000,
        20,
      )
      // Told with the node's error as its cause: a reporter decides by the cause's kind and code (an
      // outage of every endpoint is the pool's to tell once), never by these words.
      const told = errors.findIndex((e) => /insufficient funds/i.test(e))
      expect(causes[told]).toBeInstanceOf(Error)
      const secondSent = sender.submit({
        to: chain.dev.addresses.operator,
        data: fulfilUint256(second!, 2n),
        idempotencyKey: second!.requestId,
      })
      await rpc(provider, 'anvil_setBalance', [NODE, balance])
      const results = await settlesWithin(Promise.all([firstSent, secondSent]), 30_000)
      expect(results).not.toBe('timed out')
      if (results === 'timed out') return
      expect(results.map((result) => [result.status, result.nonce])).toEqual([
        ['mined', nonce],
        ['mined', nonce + 1],
      ])
      expect(sender.stats()[0]!.filled).toBe(0)
      expect(await consumerAt(chain).getFunction('uint256Value')(second!.requestId)).toBe(2n)
    } finally {
      await rpc(provider, 'anvil_setBalance', [NODE, balance])
      await sender.close()
    }
  }, 60_000)

  it('a submission whose signal was aborted before it began is refused as timed out, and the run under it ends handled (a stop)', async () => {
    const [request] = await makeRequests(chain, 1)
    const unhandled: unknown[] = []
    const onUnhandled = (reason: unknown) => unhandled.push(reason)
    process.on('unhandledRejection', onUnhandled)
    const sender = createTxSender(senderOptions(uniquePrefix('aborted-first')))
    try {
      await sender.start()
      await sender.close()
      // The sender closing under it: its run fails as the submission is refused.
      const submitted = sender.submit({
        to: chain.dev.addresses.operator,
        data: fulfilUint256(request!, 1n),
        idempotencyKey: request!.requestId,
        signal: AbortSignal.abort(),
      })
      await expect(submitted).rejects.toThrow(/did not finish in time/)
      await new Promise((resolveWait) => setTimeout(resolveWait, 200))
      expect(unhandled).toEqual([])
    } finally {
      process.off('unhandledRejection', onUnhandled)
    }
  })

  it("a stalled key fills a nonce nobody will send (the key's next nonce stored past the chain, nothing recorded for it)", async () => {
    const [request] = await makeRequests(chain, 1)
    const provider = chain.dev.provider
    const prefix = uniquePrefix('hole')
    const fromBlock = await blockNumber(chain)
    const nonce = await minedNonce(chain)
    // What a batch whose recording was lost half-way can leave: the next nonce moved on, no record.
    await redis.set(
      `${txStateBase(prefix, chain.dev.chainId)}:${NODE.toLowerCase()}:nonce`,
      nonce + 1,
    )
    const sender = createTxSender(senderOptions(prefix))
    let miner: NodeJS.Timeout | undefined
    try {
      await sender.start()
      await waitFor('the key owned', async () => sender.ownership().available === 1, 10_000, 20)
      const submitted = sender.submit({
        to: chain.dev.addresses.operator,
        data: fulfilUint256(request!, 2n),
        idempotencyKey: request!.requestId,
      })
      // A real chain makes blocks whether or not the key's transactions are in them.
      miner = setInterval(() => void rpc(provider, 'evm_mine').catch(() => undefined), 50)
      expect(await settlesWithin(submitted, 20_000)).toMatchObject({
        status: 'mined',
        nonce: nonce + 1,
      })
      expect(isFiller((await minedByNonce(chain, fromBlock)).get(nonce))).toBe(true)
      expect(sender.stats()[0]!.filled).toBe(1)
    } finally {
      clearInterval(miner)
      await sender.close()
    }
  }, 40_000)

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
    // What a process that died after signing leaves behind: a nonce and an attempt the node will
    // not take, recorded under its lease, which ran out.
    const store = new TxStore(redis, txStateBase(prefix, chain.dev.chainId))
    const owner = ownerKey(txStateBase(prefix, chain.dev.chainId), NODE)
    await redis.set(owner, 'died:1')
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
    expect(
      await store.recordFirstAttempts(NODE, 'died:1', [
        {
          jobId: 'died-with-it',
          nonce,
          attempt: {
            ...signed,
            maxFeePerGas: fees.maxFeePerGas.toString(),
            maxPriorityFeePerGas: fees.maxPriorityFeePerGas.toString(),
          },
          tx: { to: chain.dev.addresses.operator, data: '0x', gasLimit: Number(gasLimit) + 1 },
        },
      ]),
    ).toEqual(['recorded'])
    await redis.del(owner)

    const errors: string[] = []
    const sender = createTxSender({
      ...senderOptions(prefix),
      onError: (error) => errors.push(error.message),
    })
    try {
      await sender.start()
      await waitFor('the key owned', async () => sender.ownership().available === 1, 10_000, 20)
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
        async () => (await store.inflight(NODE)).length === 0,
        5_000,
        20,
      )
    } finally {
      await sender.close()
    }
  })
})
