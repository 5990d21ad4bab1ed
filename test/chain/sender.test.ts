import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { Wallet } from 'ethers'
import { ANVIL_PRIVATE_KEYS } from '../../src/dev/anvil.ts'
import { createTxSender, type TxSender } from '../../src/chain/sender/index.ts'
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

describe('transaction sender on anvil (automine)', () => {
  let chain: TestChain
  let sender: TxSender

  beforeAll(async () => {
    chain = await startTestChain({}, undefined, { poolBackstop: true })
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

    // The same idempotency key joins the finished job; a new key is stopped by its simulation.
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
    })
    expect(result).toMatchObject({ status: 'reverted', reason: 'Params do not match request ID' })
    expect(result.txHash).toBeUndefined()
  })
})
