import { AbiCoder, Wallet, type Contract } from 'ethers'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ANVIL_PRIVATE_KEYS } from '../../src/dev/anvil.ts'
import type { DemoCase } from '../../src/dev/demo.ts'
import type { SentRequest } from '../../src/dev/requests.ts'
import { startDevStack, type DevStack } from '../../src/dev/stack.ts'
import { testRedisUrl, uniquePrefix } from '../support/redis.ts'
import {
  expectFulfilledOnce,
  gameOddsCases,
  readRuns,
  requestsOfCases,
  sendPaced,
  startPart,
  stopPart,
  type PartProcess,
} from './support.ts'

const DAY_SECONDS = 24 * 3600

/**
 * No runner ran for longer than the window a start judges requests by (24 hours of chain time): the
 * listener reads on from its checkpoint, older than that, and meets the requests made meanwhile. Each
 * must be recorded as the chain says: one that another node answered or its requester cancelled is
 * not recorded refused; one still open past its cancelExpiration is. Before, the first was recorded
 * refused (expired) while the chain showed it answered.
 */
describe('a runner started again after more than a day without one', () => {
  const prefix = uniquePrefix('long-downtime')
  let stack: DevStack
  let cases: DemoCase[]
  let runner: PartProcess | undefined

  beforeAll(async () => {
    stack = await startDevStack({
      env: { ...process.env, REDIS_URL: testRedisUrl(), LOG_LEVEL: 'warn', EA_PORT: '' },
      prefix,
      nodeKeys: [ANVIL_PRIVATE_KEYS[1]!],
      runner: false,
    })
    cases = await gameOddsCases(stack)
  }, 180_000)

  afterAll(async () => {
    await stopPart(runner)
    await stack?.stop()
  }, 60_000)

  /** A runner as an operator's: RUNNER_FROM_BLOCK unset (the dev stack sets it to read its chain from block 0). */
  const startRunner = () => {
    const { RUNNER_FROM_BLOCK: _fromBlock, ...env } = stack.env
    return startPart('runner', { ...env, LOG_LEVEL: 'info' })
  }

  /** The OracleRequest log's arguments of a request (what a fulfilment or a cancel must repeat). */
  async function requestLogOf(request: SentRequest) {
    const { operator, provider } = stack.contracts
    const receipt = await provider.getTransactionReceipt(request.txHash)
    for (const log of receipt?.logs ?? []) {
      const parsed = operator.interface.parseLog(log)
      if (parsed?.name !== 'OracleRequest') continue
      const value = (name: string) => parsed.args.getValue(name) as unknown
      return {
        payment: value('payment') as bigint,
        callbackAddr: value('callbackAddr') as string,
        callbackFunctionId: value('callbackFunctionId') as string,
        cancelExpiration: value('cancelExpiration') as bigint,
      }
    }
    throw new Error(`no OracleRequest log in ${request.txHash}`)
  }

  it('records refused only the request still open; one answered elsewhere or cancelled is not', async () => {
    const { provider, consumer, operator } = stack.contracts
    runner = await startRunner()
    const fromBlock = (await provider.getBlockNumber()) + 1
    const answered = await sendPaced(stack, requestsOfCases(cases, 2), 2)
    await expectFulfilledOnce(stack, cases, answered, fromBlock, { output: () => runner!.output() })
    await stopPart(runner)
    runner = undefined

    // With no runner: three requests. Another node with the same key answers one (a Chainlink node
    // beside feedrunner, say), the requester cancels one once it may, and one is left open.
    const [elsewhere, cancelled, open] = await sendPaced(stack, requestsOfCases(cases, 3))
    const node = new Wallet(ANVIL_PRIVATE_KEYS[1]!, provider)
    const asked = await requestLogOf(elsewhere!)
    const fulfil = (await (operator.connect(node) as Contract).getFunction('fulfillOracleRequest2')(
      elsewhere!.requestId,
      asked.payment,
      asked.callbackAddr,
      asked.callbackFunctionId,
      asked.cancelExpiration,
      AbiCoder.defaultAbiCoder().encode(['bytes32', 'uint256'], [elsewhere!.requestId, 160n]),
    )) as { wait(): Promise<{ status: number | null } | null> }
    expect((await fulfil.wait())?.status).toBe(1)
    await provider.send('evm_increaseTime', [301])
    await provider.send('evm_mine', [])
    const cancel = (await (consumer as Contract).getFunction('cancelRequest')(
      cancelled!.requestId,
      (await requestLogOf(cancelled!)).cancelExpiration,
    )) as { wait(): Promise<{ status: number | null } | null> }
    expect((await cancel.wait())?.status).toBe(1)

    // Two days pass on the chain: all of that is older than the 24 hours a start reads again.
    await provider.send('evm_increaseTime', [2 * DAY_SECONDS])
    await provider.send('evm_mine', [])

    // The runner reads on from its checkpoint: a request made now is answered after the backfill.
    runner = await startRunner()
    const probeFrom = (await provider.getBlockNumber()) + 1
    const probe = await sendPaced(stack, requestsOfCases(cases, 1))
    await expectFulfilledOnce(stack, cases, probe, probeFrom, { output: () => runner!.output() })
    // A graceful stop ends every delivery under way: what is recorded now is all there will be.
    await stopPart(runner)
    runner = undefined

    const runs = await readRuns(
      stack,
      [elsewhere!, cancelled!, open!].map((request) => request.requestId),
    )
    const stateOf = (request: SentRequest) => runs.get(request.requestId)?.state
    // Redis is a cache of the chain: no record, or the one the chain's logs give.
    expect(stateOf(elsewhere!) ?? 'fulfilled').toBe('fulfilled')
    expect(stateOf(cancelled!) ?? 'cancelled').toBe('cancelled')
    expect(stateOf(open!)).toBe('refused')
    expect(runs.get(open!.requestId)?.reason).toMatch(
      /^the request passed its cancelExpiration at /,
    )
  }, 600_000)
})
