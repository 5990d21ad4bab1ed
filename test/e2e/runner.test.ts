import { cpSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { spawn, type ChildProcess } from 'node:child_process'
import { parseEther, Wallet, type Contract } from 'ethers'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { buildDemoCases, matchesExpected, runDemoCases, type DemoCase } from '../../src/dev/demo.ts'
import { deployFeedConsumer } from '../../src/dev/deploy.ts'
import {
  sendConsumerRequests,
  waitForFulfilments,
  type ConsumerRequest,
} from '../../src/dev/requests.ts'
import { startDevStack, type DevStack } from '../../src/dev/stack.ts'
import { waitFor } from '../../src/dev/process.ts'
import { feedJobShape } from '../../src/runner/feed-job.ts'
import { loadJobRegistry } from '../../src/runner/job-registry.ts'
import { testRedisUrl, uniquePrefix } from '../support/redis.ts'

const projectJobs = join(import.meta.dirname, '../../jobs')
const projectJobNames = (await loadJobRegistry(projectJobs, 31337)).jobs.map((job) => job.name)

/** A copy of a project spec under a new externalJobID, with extra TOML lines (requesters, minimum payment, ...) and edits. */
function variantSpec(
  dir: string,
  source: string,
  name: string,
  externalJobID: string,
  extraLines: string,
  edit = (text: string) => text,
): void {
  const text = edit(readFileSync(join(projectJobs, source), 'utf8'))
    .replace(/^name = .*$/m, `name = "${name}"`)
    .replace(/^externalJobID = .*$/m, `externalJobID = "${externalJobID}"`)
    .replace(/^minContractPaymentLinkJuels = .*\n/m, '')
    .replace(/^minIncomingConfirmations = .*\n/m, '')
  writeFileSync(join(dir, `${name}.toml`), `${extraLines}\n${text}`)
}

const GAME_ODDS_PARAMS: Array<[string, string]> = [
  ['region', 'england'],
  ['sport', 'soccer'],
  ['league', 'epl'],
  ['date', '2024-08-16'],
  ['homeTeam', 'Man United'],
  ['path', '$.data.homeMoneyLine'],
  ['times', '100'],
]

describe('the runner end to end: on-chain request -> value stored by the consumer', () => {
  let stack: DevStack
  let cases: DemoCase[]
  const jobsDir = mkdtempSync(join(tmpdir(), 'feedrunner-jobs-'))

  beforeAll(async () => {
    cpSync(projectJobs, jobsDir, { recursive: true })
    variantSpec(
      jobsDir,
      'game-odds.toml',
      'only-first-consumer',
      '0b7a1c4e-0000-4000-8000-000000000001',
      `requesters = ["0x9fE46736679d2D9a65F0992F2272dE9f3c7fa6e0"]\nminContractPaymentLinkJuels = "0"\nminIncomingConfirmations = 1`,
    )
    variantSpec(
      jobsDir,
      'game-odds.toml',
      'costs-one-link',
      '0b7a1c4e-0000-4000-8000-000000000002',
      `minContractPaymentLinkJuels = "1000000000000000000"\nminIncomingConfirmations = 1`,
    )
    variantSpec(
      jobsDir,
      'game-odds.toml',
      'three-confirmations',
      '0b7a1c4e-0000-4000-8000-000000000003',
      `minContractPaymentLinkJuels = "0"\nminIncomingConfirmations = 3`,
    )
    // anvil's blocks hold 30,000,000 gas.
    variantSpec(
      jobsDir,
      'game-odds.toml',
      'over-the-block-gas-limit',
      '0b7a1c4e-0000-4000-8000-000000000004',
      `minContractPaymentLinkJuels = "0"\nminIncomingConfirmations = 1`,
      (text) => {
        expect(text).toContain('gasLimit="500000"')
        return text.replace('gasLimit="500000"', 'gasLimit="40000000"')
      },
    )
    stack = await startDevStack({
      env: {
        ...process.env,
        REDIS_URL: testRedisUrl(),
        JOBS_DIR: jobsDir,
        LOG_LEVEL: 'warn',
        EA_PORT: '',
      },
      prefix: uniquePrefix('e2e'),
    })
    cases = await buildDemoCases(
      stack,
      stack.runner!.registry.jobs.filter((job) => projectJobNames.includes(job.name)),
    )
  })

  afterAll(async () => {
    await stack?.stop()
  })

  it('serves every spec in jobs/', async () => {
    expect(projectJobNames.length).toBeGreaterThanOrEqual(12)
    expect(cases.map((demoCase) => demoCase.job.name).sort()).toEqual([...projectJobNames].sort())
  })

  // One test per spec in jobs/: the data set's value, scaled and typed as the spec says, ends up on chain.
  it.each(projectJobNames)('%s: the consumer stores the expected value', async (name) => {
    const demoCase = cases.find((candidate) => candidate.job.name === name)!
    const [result] = await runDemoCases(stack, [demoCase], 30_000)
    expect(result?.actual, `request ${result?.requestId}`).toBeDefined()
    expect(
      await matchesExpected(demoCase, result?.actual),
      `stored ${String(result?.actual)}, expected ${String(demoCase.expected)}`,
    ).toBe(true)
    const run = await stack.runner!.runs.get(result!.requestId)
    await waitFor(
      'the run to be recorded as fulfilled',
      async () => (await stack.runner!.runs.get(result!.requestId))?.state === 'fulfilled',
      10_000,
    )
    expect(run?.job).toBe(name)
  })

  it('records the typed value for a known game: Manchester United v Fulham home odds 1.6 -> 160', async () => {
    const job = stack.runner!.registry.byName('datafeed game-odds (uint256)')!
    const fromBlock = await stack.contracts.provider.getBlockNumber()
    const [sent] = await sendConsumerRequests(stack.contracts.consumer, stack.contracts.deployer, [
      {
        externalJobId: job.externalJobId,
        valueType: 'uint256',
        params: GAME_ODDS_PARAMS,
        payment: 0n,
      },
    ])
    const fulfilled = await waitForFulfilments(
      stack.contracts.consumer,
      stack.contracts.provider,
      [sent!.requestId],
      { fromBlock, timeoutMs: 30_000 },
    )
    expect(fulfilled.get(sent!.requestId)?.value).toBe(160n)
    expect(await stack.contracts.consumer.getFunction('uint256Value')(sent!.requestId)).toBe(160n)
  })

  it("refuses a requester that is not in the job's requesters, and records why", async () => {
    const job = stack.runner!.registry.byName('only-first-consumer')!
    const otherConsumer: Contract = await deployFeedConsumer(stack.contracts)
    const [sent] = await sendConsumerRequests(otherConsumer, stack.contracts.deployer, [
      {
        externalJobId: job.externalJobId,
        valueType: 'uint256',
        params: GAME_ODDS_PARAMS,
        payment: 0n,
      },
    ])
    await waitFor(
      'the refusal',
      async () => (await stack.runner!.runs.get(sent!.requestId))?.state === 'refused',
      15_000,
    )
    const run = await stack.runner!.runs.get(sent!.requestId)
    expect(run?.reason).toMatch(/requester 0x[0-9a-fA-F]{40} is not in the job's requesters/)
    expect(await otherConsumer.getFunction('isFulfilled')(sent!.requestId)).toBe(false)
  })

  it('refuses a payment below minContractPaymentLinkJuels', async () => {
    const job = stack.runner!.registry.byName('costs-one-link')!
    const [sent] = await sendConsumerRequests(stack.contracts.consumer, stack.contracts.deployer, [
      {
        externalJobId: job.externalJobId,
        valueType: 'uint256',
        params: GAME_ODDS_PARAMS,
        payment: parseEther('0.1'),
      },
    ])
    await waitFor(
      'the refusal',
      async () => (await stack.runner!.runs.get(sent!.requestId))?.state === 'refused',
      15_000,
    )
    expect((await stack.runner!.runs.get(sent!.requestId))?.reason).toBe(
      "payment 0.1 LINK is below the job's minimum of 1.0 LINK (its minContractPaymentLinkJuels, else MIN_CONTRACT_PAYMENT_LINK_JUELS)",
    )
    expect(await stack.contracts.consumer.getFunction('isFulfilled')(sent!.requestId)).toBe(false)
  })

  it("errors a run whose fulfilment the node refuses for good, with the node's words, and the key's next fulfilment is mined", async () => {
    const refusedJob = stack.runner!.registry.byName('over-the-block-gas-limit')!
    const job = stack.runner!.registry.byName('datafeed game-odds (uint256)')!
    const { consumer, deployer, provider } = stack.contracts
    const [refused] = await sendConsumerRequests(consumer, deployer, [
      {
        externalJobId: refusedJob.externalJobId,
        valueType: 'uint256',
        params: GAME_ODDS_PARAMS,
        payment: 0n,
      },
    ])
    await waitFor(
      'the run to error',
      async () => (await stack.runner!.runs.get(refused!.requestId))?.state === 'errored',
      15_000,
    )
    expect((await stack.runner!.runs.get(refused!.requestId))?.reason).toMatch(
      /refused the transaction for good: .*gas_limit > env\.block\.gas_limit.*went to a filler transaction/,
    )
    // The refusal crossed the transaction queue and the run record as its kind, not as words.
    expect((await stack.runner!.runs.get(refused!.requestId))?.failure?.kind).toBe('node_refused')
    // The refused transaction's nonce was spent, so the key's next fulfilment does not wait behind it.
    const fromBlock = await provider.getBlockNumber()
    const [next] = await sendConsumerRequests(consumer, deployer, [
      {
        externalJobId: job.externalJobId,
        valueType: 'uint256',
        params: GAME_ODDS_PARAMS,
        payment: 0n,
      },
    ])
    const fulfilled = await waitForFulfilments(consumer, provider, [next!.requestId], {
      fromBlock,
      timeoutMs: 30_000,
    })
    expect(fulfilled.get(next!.requestId)?.value).toBe(160n)
    expect(await consumer.getFunction('isFulfilled')(refused!.requestId)).toBe(false)
  })

  it('does not fulfil a request cancelled before it was confirmed', async () => {
    const job = stack.runner!.registry.byName('three-confirmations')!
    const { consumer, provider } = stack.contracts
    const [sent] = await sendConsumerRequests(consumer, stack.contracts.deployer, [
      {
        externalJobId: job.externalJobId,
        valueType: 'uint256',
        params: GAME_ODDS_PARAMS,
        payment: parseEther('0.01'),
      },
    ])
    const requestLog = (await provider.getTransactionReceipt(sent!.txHash))!.logs
      .map((log) => stack.contracts.operator.interface.parseLog(log))
      .find((parsed) => parsed?.name === 'OracleRequest')!
    // The Operator lets a requester cancel only after the request's expiration (5 minutes).
    await provider.send('evm_increaseTime', [301])
    const cancel = await consumer.getFunction('cancelRequest')(
      sent!.requestId,
      requestLog.args.cancelExpiration,
    )
    expect((await cancel.wait())?.status).toBe(1)
    for (let block = 0; block < 4; block++) await provider.send('evm_mine', [])
    await waitFor(
      'the cancel to be recorded',
      async () => (await stack.runner!.runs.get(sent!.requestId))?.state === 'cancelled',
      15_000,
    )
    await stack.runner!.listener!.whenScanned(await provider.getBlockNumber(), 10_000)
    expect(await consumer.getFunction('isFulfilled')(sent!.requestId)).toBe(false)
  })
})

describe('two runner processes on one Redis', () => {
  let stack: DevStack
  const runners: ChildProcess[] = []
  const runnerOutput: string[][] = []

  beforeAll(async () => {
    stack = await startDevStack({
      env: { ...process.env, REDIS_URL: testRedisUrl(), LOG_LEVEL: 'warn', EA_PORT: '' },
      prefix: uniquePrefix('e2e-two'),
      runner: false,
    })
    for (let index = 0; index < 2; index++) {
      const child = spawn(
        process.execPath,
        [join(import.meta.dirname, '../../bin/feedrunner.js'), 'runner'],
        {
          env: { ...process.env, ...stack.env, LOG_LEVEL: 'warn', OPERATIONS_PORT: '0' },
          stdio: ['ignore', 'pipe', 'pipe'],
        },
      )
      runners.push(child)
      const output: string[] = []
      runnerOutput.push(output)
      child.stdout!.on('data', (chunk: Buffer) => output.push(chunk.toString()))
      child.stderr!.on('data', (chunk: Buffer) => output.push(chunk.toString()))
      await new Promise<void>((resolveStarted, reject) => {
        child.stdout!.on(
          'data',
          (chunk: Buffer) => chunk.toString().includes('runner started') && resolveStarted(),
        )
        child.once('exit', (code) => reject(new Error(`runner exited with ${code}`)))
      })
    }
  })

  afterAll(async () => {
    for (const child of runners) child.kill('SIGTERM')
    await Promise.all(
      runners.map(
        (child) =>
          new Promise((resolveExit) =>
            child.exitCode !== null ? resolveExit(null) : child.once('exit', resolveExit),
          ),
      ),
    )
    await stack?.stop()
  })

  it('fulfil 100 requests, each exactly once', async () => {
    const registry = await loadJobRegistry(stack.settings.JOBS_DIR, 31337)
    const job = registry.byName('datafeed game-odds (uint256)')!
    expect(feedJobShape(job.job).answerType).toBe('uint256')
    const { consumer, provider, operator } = stack.contracts
    const nodeAddress = new Wallet(stack.env.NODE_PRIVATE_KEY!).address
    const nonceBefore = await provider.getTransactionCount(nodeAddress)
    const fromBlock = await provider.getBlockNumber()
    const request: ConsumerRequest = {
      externalJobId: job.externalJobId,
      valueType: 'uint256',
      params: GAME_ODDS_PARAMS,
      payment: 0n,
    }
    const sent = await sendConsumerRequests(
      consumer,
      stack.contracts.deployer,
      Array.from({ length: 100 }, () => request),
    )
    const fulfilled = await waitForFulfilments(
      consumer,
      provider,
      sent.map((item) => item.requestId),
      { fromBlock, timeoutMs: 90_000 },
    )
    expect(fulfilled.size).toBe(100)
    for (const fulfilment of fulfilled.values()) expect(fulfilment.value).toBe(160n)
    // Exactly once on chain: one OracleResponse per request and one transaction per fulfilment, none reverted.
    const responses = await provider.getLogs({
      address: await operator.getAddress(),
      topics: [operator.interface.getEvent('OracleResponse')!.topicHash],
      fromBlock,
    })
    expect(responses.length).toBe(100)
    expect(new Set(responses.map((log) => log.topics[1])).size).toBe(100)
    const sentByNode = (await provider.getTransactionCount(nodeAddress)) - nonceBefore
    // On a mismatch, what the key sent beyond the fulfilments says why (a filler, a reverted repeat).
    const detail =
      sentByNode === 100
        ? ''
        : `${await describeSenderTxs(provider, nodeAddress, fromBlock)}\nthe runners' warnings:\n${runnerOutput.map((output) => output.join('').slice(-4000)).join('\n---\n')}`
    expect(sentByNode, detail).toBe(100)
  }, 180_000)
})

/** The key's transactions from `fromBlock`: to, value, status and the first calldata bytes, one a line. */
async function describeSenderTxs(
  provider: DevStack['contracts']['provider'],
  address: string,
  fromBlock: number,
): Promise<string> {
  const lines: string[] = []
  const latest = await provider.getBlockNumber()
  for (let number = fromBlock; number <= latest; number++) {
    const block = await provider.getBlock(number, true)
    for (const tx of block?.prefetchedTransactions ?? []) {
      if (tx.from.toLowerCase() !== address.toLowerCase()) continue
      const receipt = await provider.getTransactionReceipt(tx.hash)
      lines.push(
        `nonce ${tx.nonce} block ${number} to ${tx.to} value ${tx.value} status ${receipt?.status} data ${tx.data.slice(0, 10)} logs ${receipt?.logs.length}`,
      )
    }
  }
  return `the node key's transactions since block ${fromBlock}:\n${lines.join('\n')}`
}
