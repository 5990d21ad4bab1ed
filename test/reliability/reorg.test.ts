import { cpSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Wallet, type JsonRpcProvider } from 'ethers'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  sendConsumerRequests,
  waitForFulfilments,
  type ConsumerRequest,
} from '../../src/dev/requests.ts'
import { startDevStack, type DevStack } from '../../src/dev/stack.ts'
import { waitFor } from '../../src/dev/process.ts'
import { testRedisUrl, uniquePrefix } from '../support/redis.ts'
import { onChainFulfilments, readRuns, recordFigures } from './support.ts'

const projectJobs = join(import.meta.dirname, '../../jobs')
const TWO_CONFIRMATIONS_ID = '0b7a1c4e-0000-4000-8000-0000000000c2'

// Home teams of EPL 2024-25 gameweek 1 and their match days (the data set's real fixtures).
const GAMES: Array<[string, string]> = [
  ['Man United', '2024-08-16'],
  ['Ipswich', '2024-08-17'],
  ['Arsenal', '2024-08-17'],
  ['Everton', '2024-08-17'],
]
function gameOdds([homeTeam, date]: [string, string], externalJobId: string): ConsumerRequest {
  return {
    externalJobId,
    valueType: 'uint256',
    params: [
      ['region', 'england'],
      ['sport', 'soccer'],
      ['league', 'epl'],
      ['date', date],
      ['homeTeam', homeTeam],
      ['path', '$.data.homeMoneyLine'],
      ['times', '100'],
    ],
    payment: 0n,
  }
}

/**
 * Reorgs on anvil: with minIncomingConfirmations = 2, four requests are mined in one block that the
 * listener sees with one confirmation; the chain is then reverted to before that block (evm_revert)
 * and only two of them are mined again, in a later block of the new chain. The two re-included
 * requests are fulfilled once; the two that exist only on the abandoned chain never are.
 */
describe('reorgs: requests in blocks reorged away', () => {
  let stack: DevStack
  let provider: JsonRpcProvider
  const jobsDir = mkdtempSync(join(tmpdir(), 'feedrunner-reorg-jobs-'))

  beforeAll(async () => {
    cpSync(projectJobs, jobsDir, { recursive: true })
    const text = readFileSync(join(projectJobs, 'game-odds.toml'), 'utf8')
      .replace(/^name = .*$/m, 'name = "two-confirmations"')
      .replace(/^externalJobID = .*$/m, `externalJobID = "${TWO_CONFIRMATIONS_ID}"`)
      .replace(/^minIncomingConfirmations = .*$/m, 'minIncomingConfirmations = 2')
    writeFileSync(join(jobsDir, 'two-confirmations.toml'), text)
    stack = await startDevStack({
      env: {
        ...process.env,
        REDIS_URL: testRedisUrl(),
        JOBS_DIR: jobsDir,
        LOG_LEVEL: 'warn',
        EA_PORT: '',
      },
      prefix: uniquePrefix('rel-reorg'),
    })
    provider = stack.contracts.provider as JsonRpcProvider
  }, 120_000)

  afterAll(async () => {
    await provider?.send('evm_setAutomine', [true]).catch(() => undefined)
    await stack?.stop()
  })

  it('fulfils re-included requests once and never the ones reorged away', async () => {
    const { consumer, deployer } = stack.contracts
    const listener = stack.runner!.listener!
    const nodeKey = stack.env.NODE_PRIVATE_KEY!
    const nonceBefore = await provider.getTransactionCount(new Wallet(nodeKey).address)
    const base = await provider.getBlockNumber()
    const snapshot = (await provider.send('evm_snapshot', [])) as string

    // Four requests in one block (automine off), seen by the listener with one confirmation only.
    await provider.send('evm_setAutomine', [false])
    const sending = sendConsumerRequests(
      consumer,
      deployer,
      GAMES.map((game) => gameOdds(game, TWO_CONFIRMATIONS_ID)),
    )
    await waitFor(
      'four requests in the pool',
      async () =>
        Number(((await provider.send('txpool_status', [])) as { pending: string }).pending) >=
        GAMES.length,
      10_000,
    )
    await provider.send('evm_mine', [])
    const sent = await sending
    const oldBlock = sent[0]!.blockNumber
    expect(new Set(sent.map((request) => request.blockNumber))).toEqual(new Set([base + 1]))
    const raws = await Promise.all(
      sent.map(
        (request) =>
          provider.send('eth_getRawTransactionByHash', [request.txHash]) as Promise<string>,
      ),
    )
    await listener.whenScanned(oldBlock, 15_000)
    const oldHash = (await provider.getBlock(oldBlock))!.hash

    // The reorg: back to before the requests, an empty block in their place, two of them re-included one block later.
    expect(await provider.send('evm_revert', [snapshot])).toBe(true)
    await provider.send('anvil_dropAllTransactions', [])
    await provider.send('evm_mine', [])
    for (const raw of raws.slice(0, 2)) await provider.send('eth_sendRawTransaction', [raw])
    await provider.send('evm_mine', [])
    const newBlock = base + 2
    const receipts = await Promise.all(
      sent.slice(0, 2).map((request) => provider.getTransactionReceipt(request.txHash)),
    )
    expect(receipts.map((receipt) => receipt?.blockNumber)).toEqual([newBlock, newBlock])
    expect((await provider.getBlock(oldBlock))!.hash).not.toBe(oldHash)
    // Confirmations come with further blocks; fulfilments are mined as they are sent.
    await provider.send('evm_setAutomine', [true])
    await provider.send('evm_mine', [])

    const reincluded = sent.slice(0, 2).map((request) => request.requestId)
    const orphaned = sent.slice(2).map((request) => request.requestId)
    const fulfilled = await waitForFulfilments(consumer, provider, reincluded, {
      fromBlock: base + 1,
      timeoutMs: 60_000,
    })
    expect(fulfilled.size).toBe(2)
    for (const fulfilment of fulfilled.values()) expect(typeof fulfilment.value).toBe('bigint')
    // Let the listener pass several more blocks: the orphaned requests must still not be served.
    for (let index = 0; index < 3; index++) await provider.send('evm_mine', [])
    await listener.whenScanned(await provider.getBlockNumber(), 15_000)
    await waitFor(
      'the re-included runs to be recorded fulfilled',
      async () =>
        [...(await readRuns(stack, reincluded)).values()].every(
          (run) => run?.state === 'fulfilled',
        ),
      15_000,
    )
    const orphanRuns = await readRuns(stack, orphaned)
    for (const id of orphaned)
      expect(orphanRuns.get(id)?.state, `orphaned request ${id}`).not.toBe('fulfilled')
    expect(await consumer.getFunction('isFulfilled')(orphaned[0])).toBe(false)

    const chain = await onChainFulfilments(stack, base + 1, nodeKey, nonceBefore)
    expect(chain).toEqual({ responses: 2, uniqueResponses: 2, nonceDelta: 2, reverted: 0 })
    recordFigures('reorg', {
      minIncomingConfirmations: 2,
      requestsInReorgedBlock: sent.length,
      reincluded: reincluded.length,
      fulfilledOnce: chain.uniqueResponses,
      orphanedFulfilled: 0,
      orphanedRunStates: orphaned.map((id) => orphanRuns.get(id)?.state ?? 'none'),
      nodeTransactions: chain.nonceDelta,
    })
  }, 120_000)
})
