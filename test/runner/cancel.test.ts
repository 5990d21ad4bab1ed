import { Wallet } from 'ethers'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { waitFor } from '../../src/dev/process.ts'
import { startHeldFeedStack, type HeldFeedStack } from '../support/held-feed-stack.ts'
import { uniquePrefix } from '../support/redis.ts'

/**
 * A request its requester cancels while its run is in progress (its fetch held by the feed service):
 * the fulfilment is simulated just before it would be signed, the simulation finds the request
 * cancelled, and nothing is sent. The run says cancelled, as the chain does.
 */
describe('a request cancelled while its run is in progress', () => {
  let held: HeldFeedStack

  beforeAll(async () => {
    held = await startHeldFeedStack(uniquePrefix('cancel'))
  }, 120_000)

  afterAll(async () => {
    await held?.stop()
  })

  it('sends no fulfilment, pays no gas, and records the run cancelled', async () => {
    const { stack } = held
    const { consumer, provider, operator } = stack.contracts
    const node = new Wallet(stack.env.NODE_PRIVATE_KEY!).address
    const nonceBefore = await provider.getTransactionCount(node)
    const sent = await held.requestHeld()
    const { requestId } = sent
    const runs = stack.runner!.runs
    expect((await runs.get(requestId))?.state).toBe('running')
    // The Operator lets the requester cancel after its five minutes: chain time, not the clock.
    const record = (await runs.get(requestId))!
    await provider.send('evm_increaseTime', [301])
    await provider.send('evm_mine', [])
    const cancelled = await (
      await consumer.getFunction('cancelRequest')(requestId, BigInt(record.cancelExpiration!))
    ).wait()
    held.release()
    await waitFor(
      'the run final',
      async () => (await runs.get(requestId))?.state === 'cancelled',
      30_000,
      50,
    )
    // From the chain: the cancel is there, no answer, and the node key sent nothing.
    const operatorAddress = await operator.getAddress()
    const logs = await provider.getLogs({
      address: operatorAddress,
      topics: [null, requestId],
      fromBlock: sent.blockNumber,
    })
    const names = logs.map((log) => operator.interface.parseLog(log)?.name)
    expect(names).toContain('CancelOracleRequest')
    expect(names).not.toContain('OracleResponse')
    expect(await provider.getTransactionCount(node)).toBe(nonceBefore)
    expect(cancelled?.status).toBe(1)
    const run = await runs.get(requestId)
    expect(run?.state).toBe('cancelled')
    expect(run?.txHash).toBeUndefined()
  }, 90_000)
})
