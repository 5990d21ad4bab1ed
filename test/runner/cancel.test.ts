import { Wallet } from 'ethers'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { waitFor } from '../../src/dev/process.ts'
import { FINAL_RUN_STATES } from '../../src/runner/run-record.ts'
import { startHeldFeedStack, type HeldFeedStack } from '../support/held-feed-stack.ts'
import type { TappedCall } from '../support/json-rpc-tap.ts'
import { uniquePrefix } from '../support/redis.ts'

/**
 * A request its requester cancels while its run is in progress, after the run's expiry check read the
 * chain's time and before its fulfilment is signed: only the simulation just before signing
 * (key-sender.ts, sendNew) can see the cancel then. The runner reads the chain through a tap that
 * keeps answering the head it read before the cancel (as a head read an instant before the cancel's
 * block, or one cached for a poll interval, would), so its expiry check passes; the simulation reads
 * the chain's state as it is, finds the request gone, and nothing is signed. The run says cancelled,
 * as the chain does, and the chain shows no transaction of the node key. With that simulation taken
 * out, the fulfilment went out and was mined, reverted, and the test failed on the node key's
 * transaction count and on the broadcast the tap saw.
 */
describe('a request cancelled between its expiry check and the signing of its fulfilment', () => {
  let held: HeldFeedStack

  beforeAll(async () => {
    held = await startHeldFeedStack(uniquePrefix('cancel'), { tapped: true })
  }, 120_000)

  afterAll(async () => {
    await held?.stop()
  })

  it('is caught by the simulation before signing: nothing sent, no gas paid, the run cancelled', async () => {
    const { stack, runner } = held
    const tap = held.tap!
    // The test's calls go to the chain directly, around the tap.
    const { consumer, provider, operator } = stack.contracts
    const operatorAddress = (await operator.getAddress()).toLowerCase()
    const node = new Wallet(stack.env.NODE_PRIVATE_KEY!).address
    const nonceBefore = await provider.getTransactionCount(node)
    const sent = await held.requestHeld()
    const { requestId } = sent
    const runs = runner.runs
    const record = (await runs.get(requestId))!
    expect(record.state).toBe('running')

    // From here the runner's head stays the one it read last, before the cancel.
    tap.holdHead = true
    // The Operator lets the requester cancel after its five minutes: chain time, not the clock.
    await provider.send('evm_increaseTime', [301])
    await provider.send('evm_mine', [])
    const cancel = await (
      await consumer.getFunction('cancelRequest')(requestId, BigInt(record.cancelExpiration!))
    ).wait()
    expect(cancel?.status).toBe(1)
    const callsBefore = tap.calls.length
    held.release()
    const simulated = (call: TappedCall) =>
      call.method === 'eth_call' &&
      String((call.params[0] as { to?: unknown } | undefined)?.to).toLowerCase() === operatorAddress
    const broadcast = (call: TappedCall) => call.method === 'eth_sendRawTransaction'
    await waitFor(
      'the fulfilment simulated or sent',
      async () => tap.calls.slice(callsBefore).some((call) => simulated(call) || broadcast(call)),
      30_000,
      20,
    )
    tap.holdHead = false
    await waitFor(
      'the run final',
      async () =>
        (FINAL_RUN_STATES as readonly string[]).includes((await runs.get(requestId))?.state ?? ''),
      30_000,
      50,
    )

    // From the chain: the cancel is there, no answer, and the node key sent nothing, mined or reverted.
    const logs = await provider.getLogs({
      address: operatorAddress,
      topics: [null, requestId],
      fromBlock: sent.blockNumber,
    })
    const names = logs.map((log) => operator.interface.parseLog(log)?.name)
    expect(names).toContain('CancelOracleRequest')
    expect(names).not.toContain('OracleResponse')
    expect(await provider.getTransactionCount(node)).toBe(nonceBefore)
    expect(tap.calls.slice(callsBefore).filter(broadcast)).toEqual([])
    const run = await runs.get(requestId)
    expect(run?.state).toBe('cancelled')
    expect(run?.txHash).toBeUndefined()
  }, 90_000)
})
