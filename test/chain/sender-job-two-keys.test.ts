import { Redis } from 'ioredis'
import { Wallet } from 'ethers'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTxSender, txStateBase, type TxSender } from '../../src/chain/sender/index.ts'
import { ANVIL_PRIVATE_KEYS } from '../../src/dev/anvil.ts'
import { waitFor } from '../../src/dev/process.ts'
import { testRedisUrl, uniquePrefix } from '../support/redis.ts'
import { settlesWithin } from '../support/settles-within.ts'
import { fulfilUint256, makeRequests, rpc, startTestChain, type TestChain } from './support.ts'

const FIRST_KEY = ANVIL_PRIVATE_KEYS[1]
const SECOND_KEY = ANVIL_PRIVATE_KEYS[2]
const FIRST = new Wallet(FIRST_KEY).address
type TestRequest = Awaited<ReturnType<typeof makeRequests>>[number]

/**
 * Redis loses a job's record while its transaction is in the node's pool (a FLUSHALL): a run of the
 * job sent again goes out from another key, and Redis now binds the job to that key. The first key's
 * owner still settles its own transaction. What it writes must not land on the other key's record:
 * the chaos search's seed 1194350547 found the first key's index then naming the job, its next owner
 * watching the other key's transaction as its own (nonce 2, above the key's count: "a reorg took it
 * away"), filling the nonces below and signing the fulfilment again, after the request was answered.
 */
describe("transaction sender: a job sent by two keys after Redis lost the first one's record", () => {
  let chain: TestChain
  let redis: Redis
  const prefix = uniquePrefix('sender-two-keys')
  const senders: TxSender[] = []
  const newSender = (key: string) => {
    const sender = createTxSender({
      rpcUrl: chain.anvil.rpcUrl,
      chainId: chain.dev.chainId,
      keys: [key],
      redisUrl: testRedisUrl(),
      prefix,
      pollIntervalMs: 50,
      finalityDepth: 10,
      bumpAfterBlocks: 1,
    })
    senders.push(sender)
    return sender
  }

  beforeAll(async () => {
    chain = await startTestChain({}, [FIRST_KEY, SECOND_KEY])
    redis = new Redis(testRedisUrl())
  })
  afterAll(async () => {
    for (const sender of senders) await sender.close()
    const keys = await redis.keys(`${prefix}:*`)
    if (keys.length > 0) await redis.del(...keys)
    redis.disconnect()
    await chain?.stop()
  })

  const provider = () => chain.dev.provider
  const minedCount = async (address: string) =>
    Number(await rpc<string>(provider(), 'eth_getTransactionCount', [address, 'latest']))
  const submission = (request: TestRequest) => ({
    to: chain.dev.addresses.operator,
    data: fulfilUint256(request, 7n),
    idempotencyKey: request.requestId,
  })
  const ended = async <T>(promise: Promise<T>): Promise<T> => {
    const result = await settlesWithin(promise, 60_000)
    if (result === 'timed out') throw new Error('a fulfilment job did not end within 60 s')
    return result
  }

  it("the first key's owner settles only its own transaction; the key's next owner watches nothing of the other key's", async () => {
    const [job, ...others] = await makeRequests(chain, 5)
    const first = newSender(FIRST_KEY)
    const second = newSender(SECOND_KEY)
    await Promise.all([first.start(), second.start()])
    // The second key ahead of the first: its nonce for the job is above the first key's count.
    for (const other of others.slice(0, 2))
      expect(await ended(second.submit(submission(other!)))).toMatchObject({ status: 'mined' })
    const firstNonce = await minedCount(FIRST)

    // Mining stops: the first key's fulfilment waits in the pool while Redis loses its record.
    await rpc(provider(), 'evm_setAutomine', [false])
    const firstSent = first.submit(submission(job!))
    await waitFor('the first key sending', async () => first.stats()[0]!.sent === 1, 60_000, 20)
    const jobKey = `${txStateBase(prefix, chain.dev.chainId)}:job:${job!.requestId}`
    expect(await redis.del(jobKey)).toBe(1)
    // The job sent again from the second key. In the search its simulation ran before the node had
    // the first key's fulfilment; here that one is in the pool, so the second key's transaction
    // fulfils another request, which its simulation lets through: the job id is what matters.
    const secondSent = second.submit({ ...submission(others[2]!), idempotencyKey: job!.requestId })
    await waitFor('the second key sending', async () => second.stats()[0]!.sent === 3, 60_000, 20)
    await rpc(provider(), 'evm_mine', [])
    await rpc(provider(), 'evm_setAutomine', [true])
    const [byFirst, bySecond] = await Promise.all([ended(firstSent), ended(secondSent)])
    expect(byFirst).toMatchObject({ from: FIRST, nonce: firstNonce })
    expect(bySecond.nonce).toBe(2)

    // The job's record is the second key's, and says how the second key's transaction ended.
    const record = await redis.hgetall(jobKey)
    expect(record.from).toBe(new Wallet(SECOND_KEY).address.toLowerCase())
    expect(JSON.parse(record.result ?? '{}')).toMatchObject({ txHash: bySecond.txHash })

    // The first key changes hands; its next owner sends a job of its own at the key's next nonce.
    await first.close()
    const next = newSender(FIRST_KEY)
    await next.start()
    await waitFor('the next owner sending', async () => next.ownership().available === 1, 60_000)
    const own = await ended(next.submit(submission(others[3]!)))
    expect(own).toMatchObject({ status: 'mined', from: FIRST, nonce: firstNonce + 1 })
    // It watched nothing of the second key's: no reorg seen, no nonce filled, nothing waited for.
    expect(next.stats()[0]).toMatchObject({ reorgedOut: 0, filled: 0, sent: 1, pending: 0 })
    expect(await minedCount(FIRST)).toBe(firstNonce + 2)
  })
})
