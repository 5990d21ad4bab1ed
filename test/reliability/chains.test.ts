import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Contract, JsonRpcApiProvider } from 'ethers'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startAnvil, type Anvil } from '../../src/dev/anvil.ts'
import { buildDemoCases, matchesExpected, type DemoCase } from '../../src/dev/demo.ts'
import { deployDevContracts, type DevContracts } from '../../src/dev/deploy.ts'
import { waitFor } from '../../src/dev/process.ts'
import {
  sendConsumerRequests,
  waitForFulfilments,
  type SentRequest,
} from '../../src/dev/requests.ts'
import { startDevStack, type DevStack } from '../../src/dev/stack.ts'
import { createRedisConnection } from '../../src/queue/connection.ts'
import { loadJobRegistry, type LoadedJob } from '../../src/runner/job-registry.ts'
import { RunStore } from '../../src/runner/run-record.ts'
import { testRedisUrl, uniquePrefix } from '../support/redis.ts'
import { startPart, stopPart, type PartProcess } from './support.ts'

const OTHER_CHAIN_ID = 1_337
const PER_CHAIN = 12
const projectJobs = join(import.meta.dirname, '../../jobs')

/**
 * Two anvil chains with different chain ids, each with LinkToken, Operator and FeedConsumer at the
 * same addresses (one deployer, one nonce sequence: the first requests of both chains carry the same
 * request ids), served by ONE runner process from a CHAINS_FILE whose chains share the node key. Each
 * chain's spec answers on its chain: every request is fulfilled exactly once, on its own chain, as
 * that chain's OracleResponse logs tell.
 */
describe('one runner process, two chains', () => {
  let stack: DevStack
  let other: { anvil: Anvil; dev: DevContracts }
  let runner: PartProcess | undefined
  const cases = new Map<number, DemoCase>()

  beforeAll(async () => {
    stack = await startDevStack({
      env: { ...process.env, REDIS_URL: testRedisUrl(), LOG_LEVEL: 'warn', EA_PORT: '' },
      prefix: uniquePrefix('rel-chains'),
      runner: false,
    })
    const anvil = await startAnvil({ chainId: OTHER_CHAIN_ID })
    other = { anvil, dev: await deployDevContracts(anvil.rpcUrl, { nodeKeys: [nodeKey()] }) }
    const jobsDir = mkdtempSync(join(tmpdir(), 'chains-jobs-'))
    const chainIds = [stack.contracts.chainId, OTHER_CHAIN_ID]
    for (const [index, chainId] of chainIds.entries())
      writeFileSync(join(jobsDir, `odds-${chainId}.toml`), oddsSpecFor(chainId, index))
    const registry = await loadJobRegistry(jobsDir, chainIds)
    for (const chainId of chainIds) {
      const job = registry.jobs.find((loaded) => loaded.job.spec.evmChainID === BigInt(chainId))
      const [demoCase] = await buildDemoCases(stack, [job as LoadedJob])
      cases.set(chainId, demoCase!)
    }
    const chainsFile = join(mkdtempSync(join(tmpdir(), 'chains-file-')), 'chains.toml')
    writeFileSync(
      chainsFile,
      chainIds
        .map(
          (chainId, index) => `[[chains]]
chain_id = ${chainId}
keys_env = ["CHAINS_TEST_NODE_KEY"]
endpoints = [{ url = "${index === 0 ? stack.env.RPC_URL : other.anvil.rpcUrl}" }]
`,
        )
        .join('\n'),
    )
    runner = await startPart('runner', {
      ...stack.env,
      RPC_URL: '',
      NODE_PRIVATE_KEY: '',
      CHAINS_FILE: chainsFile,
      CHAINS_TEST_NODE_KEY: nodeKey(),
      JOBS_DIR: jobsDir,
      LOG_FORMAT: 'json',
    })
  }, 180_000)

  afterAll(async () => {
    await stopPart(runner)
    other?.dev.provider.destroy()
    await other?.anvil.stop()
    await stack?.stop()
  }, 60_000)

  function nodeKey(): string {
    return stack.env.NODE_PRIVATE_KEY!
  }

  it('fulfils every request once, each on its own chain', async () => {
    const chains: Array<[number, { consumer: Contract; deployer: DevContracts['deployer'] }]> = [
      [stack.contracts.chainId, stack.contracts],
      [OTHER_CHAIN_ID, other.dev],
    ]
    const fromBlocks = new Map<number, number>()
    const sent = new Map<number, SentRequest[]>()
    for (const [chainId, { consumer, deployer }] of chains) {
      fromBlocks.set(chainId, (await providerOf(chainId).getBlockNumber()) + 1)
      const demoCase = cases.get(chainId)!
      const request = {
        externalJobId: demoCase.job.externalJobId,
        valueType: demoCase.shape.answerType,
        params: demoCase.params,
        payment: demoCase.minimumPayment ?? 0n,
      }
      sent.set(
        chainId,
        await sendConsumerRequests(consumer, deployer, Array(PER_CHAIN).fill(request)),
      )
    }
    // One deployer, one consumer address, one nonce sequence: the two chains ask with the same ids.
    const ids = (chainId: number) => sent.get(chainId)!.map((request) => request.requestId)
    expect(ids(OTHER_CHAIN_ID)).toEqual(ids(stack.contracts.chainId))

    for (const [chainId, { consumer }] of chains) {
      const fulfilled = await waitForFulfilments(consumer, providerOf(chainId), ids(chainId), {
        fromBlock: fromBlocks.get(chainId)!,
        timeoutMs: 180_000,
      })
      expect(fulfilled.size).toBe(PER_CHAIN)
      for (const fulfilment of fulfilled.values())
        expect(await matchesExpected(cases.get(chainId)!, fulfilment.value)).toBe(true)
      // The chain's word: one OracleResponse per request, none twice.
      const responses = await oracleResponses(chainId, fromBlocks.get(chainId)!)
      expect(responses.length).toBe(PER_CHAIN)
      expect(new Set(responses).size).toBe(PER_CHAIN)
      expect(new Set(responses)).toEqual(new Set(ids(chainId)))
    }

    // Each chain's run records, apart though their request ids are the same (a record says
    // `fulfilled` once the runner has seen its receipt, a moment after the chain has it).
    const redis = createRedisConnection(stack.redisUrl, 'worker')
    try {
      const notFulfilled = async () => {
        const left: string[] = []
        for (const [chainId] of chains) {
          const runs = new RunStore(redis, `${stack.settings.QUEUE_PREFIX}:runner`, chainId)
          for (const requestId of ids(chainId)) {
            const run = await runs.get(requestId)
            if (run?.state !== 'fulfilled' || run.chainId !== chainId)
              left.push(`${chainId}:${requestId} ${run?.chainId} ${run?.state ?? 'no record'}`)
          }
        }
        return left
      }
      await waitFor(
        'every run record fulfilled',
        async () => (await notFulfilled()).length === 0,
        60_000,
      ).catch(() => undefined)
      expect(await notFulfilled()).toEqual([])
    } finally {
      redis.disconnect()
    }
    expect(runner!.output()).not.toMatch(/"level":(50|60)/)
  }, 300_000)

  function providerOf(chainId: number): JsonRpcApiProvider {
    return (chainId === OTHER_CHAIN_ID ? other.dev : stack.contracts).provider as JsonRpcApiProvider
  }

  async function oracleResponses(chainId: number, fromBlock: number): Promise<string[]> {
    const { operator } = chainId === OTHER_CHAIN_ID ? other.dev : stack.contracts
    const logs = await providerOf(chainId).getLogs({
      address: await operator.getAddress(),
      topics: [operator.interface.getEvent('OracleResponse')!.topicHash],
      fromBlock,
    })
    return logs.map((log) => log.topics[1]!)
  }
})

/** The project's game-odds spec, as a job of its own on `chainId` (its own name and externalJobID). */
function oddsSpecFor(chainId: number, index: number): string {
  return readFileSync(join(projectJobs, 'game-odds.toml'), 'utf8')
    .replace(/^name = ".*"$/m, `name = "game-odds on chain ${chainId}"`)
    .replace(
      /^externalJobID = ".*"$/m,
      `externalJobID = "3f1c7d2a-6b1e-4f0a-9c55-0a1b2c3d4f${String(index).padStart(2, '0')}"`,
    )
    .replace(/^evmChainID = ".*"$/m, `evmChainID = "${chainId}"`)
}
