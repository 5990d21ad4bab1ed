import { mkdirSync, writeFileSync } from 'node:fs'
import { expect } from 'vitest'
import { join } from 'node:path'
import { Wallet, type JsonRpcProvider, type Provider } from 'ethers'
import { startFeedrunnerProcess, type FeedrunnerProcess } from '../../src/dev/feedrunner-process.ts'
import { buildDemoCases, matchesExpected, type DemoCase } from '../../src/dev/demo.ts'
import { deployPushedValue, PUSHED_VALUE, tickWriterSpec } from '../../src/dev/pushed-value.ts'
import { waitFor } from '../../src/dev/process.ts'
import { loadJobRegistry } from '../../src/runner/job-registry.ts'
import type { DevStack } from '../../src/dev/stack.ts'
import { RunStore, FINAL_RUN_STATES, type RunRecord } from '../../src/runner/run-record.ts'
import { createRedisConnection } from '../../src/queue/connection.ts'
import {
  sendConsumerRequests,
  waitForFulfilments,
  type ConsumerRequest,
  type SentRequest,
} from '../../src/dev/requests.ts'

export const FIGURES_DIR = join(import.meta.dirname, '../../.cache/reliability')

/** Debian's libfaketime (`apt-get install faketime`): preloaded, it shifts one process's wall clock. */
export const LIBFAKETIME = '/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1'

export type PartKind = 'runner' | 'adapter' | 'worker' | 'start'

/** The line each command prints once it serves. */
const READY: Record<PartKind, string> = {
  runner: 'feedrunner runner started',
  adapter: 'feedrunner adapter listening',
  worker: 'feedrunner fetch workers running',
  start: 'feedrunner runner watching',
}

/** A `feedrunner <part>` child process whose whole output is kept (secret scans read it). */
export interface PartProcess extends FeedrunnerProcess {
  readonly kind: PartKind
}

export async function startPart(
  kind: PartKind,
  env: Record<string, string>,
  timeoutMs = 60_000,
): Promise<PartProcess> {
  // Several parts share this machine (and other test files run beside them): no fixed metrics or health ports.
  const partEnv = { LOG_LEVEL: 'warn', OPERATIONS_PORT: '0', METRICS_ENABLED: 'false', ...env }
  const part = await startFeedrunnerProcess({
    name: `feedrunner ${kind}`,
    args: [kind],
    env: partEnv,
    ready: READY[kind],
    readyTimeoutMs: timeoutMs,
    stopGraceMs: 12_000,
  })
  return { ...part, kind }
}

/** Stops a part (SIGTERM, SIGKILL after 12 s) and resolves when it is gone. */
export async function stopPart(part: PartProcess | undefined): Promise<void> {
  await part?.stop()
}

/** Small seeded PRNG (mulberry32): random choices a failing run can repeat with the printed seed. */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0
  return () => {
    state = (state + 0x6d2b79f5) >>> 0
    let t = state
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

/** The job of jobs/game-odds.toml. */
export const GAME_ODDS_JOB_ID = '3f1c7d2a-6b1e-4f0a-9c55-0a1b2c3d4e01'

/** A fair requester's request: Manchester United's home odds of 2024-08-16, times 100. */
export function fairGameOddsRequest(): ConsumerRequest {
  return {
    externalJobId: GAME_ODDS_JOB_ID,
    valueType: 'uint256',
    params: [
      ['region', 'england'],
      ['sport', 'soccer'],
      ['league', 'epl'],
      ['date', '2024-08-16'],
      ['homeTeam', 'Manchester United'],
      ['path', 'data.homeMoneyLine'],
      ['times', '100'],
    ],
    payment: 0n,
  }
}

/** Runs of each hostile-input property (`RELIABILITY_FUZZ_RUNS`, 1,000 unless set). */
export const FUZZ_RUNS = Number(process.env.RELIABILITY_FUZZ_RUNS ?? 1_000)

/** Prints a test's figures and keeps them for `npm run test:reliability`'s summary. */
export function recordFigures(name: string, figures: Record<string, unknown>): void {
  mkdirSync(FIGURES_DIR, { recursive: true })
  const record = { name, at: new Date().toISOString(), ...figures }
  writeFileSync(
    join(FIGURES_DIR, `${name}.json`),
    `${JSON.stringify(record, (_key, value: unknown) => (typeof value === 'bigint' ? value.toString() : value), 2)}\n`,
  )
  console.log(
    `[reliability] ${name}: ${JSON.stringify(figures, (_key, value: unknown) => (typeof value === 'bigint' ? value.toString() : value))}`,
  )
}

/** Every run of the given requests, read from the RunStore under the stack's prefix. */
export async function readRuns(
  stack: DevStack,
  requestIds: readonly string[],
): Promise<Map<string, RunRecord | undefined>> {
  const redis = createRedisConnection(stack.redisUrl, 'worker')
  try {
    const store = new RunStore(
      redis,
      `${stack.settings.QUEUE_PREFIX}:runner`,
      stack.contracts.chainId,
    )
    const runs = new Map<string, RunRecord | undefined>()
    for (const id of requestIds) runs.set(id, await store.get(id))
    return runs
  } finally {
    redis.disconnect()
  }
}

/** Requests (sent in turn for `cases`, round robin) whose stored value is not their case's expected one. */
export async function wrongValues(
  cases: readonly DemoCase[],
  sent: readonly { requestId: string }[],
  fulfilled: ReadonlyMap<string, { value: unknown }>,
): Promise<string[]> {
  const wrong: string[] = []
  for (const [index, request] of sent.entries()) {
    const demoCase = cases[index % cases.length] as DemoCase
    const value = fulfilled.get(request.requestId)?.value
    if (!(await matchesExpected(demoCase, value)))
      wrong.push(
        `request ${index} (${demoCase.job.name}): ${String(value)}, expected ${String(demoCase.expected)}`,
      )
  }
  return wrong
}

/**
 * The runs not recorded as fulfilled once every run is final or `waitMs` has passed, each with its
 * state, the times of its states and its reason, so a run left behind says where it stopped.
 */
export async function runsNotFulfilled(
  stack: DevStack,
  requestIds: readonly string[],
  waitMs: number,
): Promise<string[]> {
  const deadline = Date.now() + waitMs
  let runs = await readRuns(stack, requestIds)
  while (![...runs.values()].every(isFinalRun) && Date.now() < deadline) {
    await new Promise((resolveDelay) => setTimeout(resolveDelay, 200))
    runs = await readRuns(stack, requestIds)
  }
  return [...runs.entries()]
    .filter(([, run]) => run?.state !== 'fulfilled')
    .map(
      ([id, run]) =>
        `${id}: ${run?.state ?? 'no record'} ${JSON.stringify(run?.times ?? {})} ${run?.reason?.slice(-400) ?? ''}`,
    )
}

export function isFinalRun(run: RunRecord | undefined): boolean {
  return run !== undefined && FINAL_RUN_STATES.includes(run.state)
}

/** The Operator's OracleResponse logs since `fromBlock` and the node's transactions, for exactly-once checks. */
export async function onChainFulfilments(
  stack: DevStack,
  fromBlock: number,
  nodeKey: string,
  nonceBefore: number,
): Promise<{ responses: number; uniqueResponses: number; nonceDelta: number; reverted: number }> {
  const { operator, provider } = stack.contracts
  const logs = await provider.getLogs({
    address: await operator.getAddress(),
    topics: [operator.interface.getEvent('OracleResponse')!.topicHash],
    fromBlock,
  })
  const node = new Wallet(nodeKey).address
  const nonceAfter = await provider.getTransactionCount(node)
  const reverted = await countRevertedFrom(provider, node, fromBlock)
  return {
    responses: logs.length,
    uniqueResponses: new Set(logs.map((log) => log.topics[1])).size,
    nonceDelta: nonceAfter - nonceBefore,
    reverted,
  }
}

/**
 * Once `address` has nothing in the node's pool and three more blocks are mined (so anything a
 * runner sends late is mined before the chain is read): its transactions since `fromBlock` that
 * reverted.
 */
export async function revertedOnceIdle(
  provider: JsonRpcProvider,
  address: string,
  fromBlock: number,
): Promise<number> {
  await waitFor(
    `sender ${address} idle`,
    async () =>
      Number(await provider.send('eth_getTransactionCount', [address, 'pending'])) ===
      (await provider.getTransactionCount(address, 'latest')),
    60_000,
    100,
  )
  for (let index = 0; index < 3; index++) await provider.send('evm_mine', [])
  return countRevertedFrom(provider, address, fromBlock)
}

/** The Operator's OracleResponse logs for `requestId` from `fromBlock` on. */
export async function oracleResponsesOf(stack: DevStack, requestId: string, fromBlock: number) {
  const { operator, provider } = stack.contracts
  return provider.getLogs({
    address: await operator.getAddress(),
    topics: [operator.interface.getEvent('OracleResponse')!.topicHash, requestId],
    fromBlock,
  })
}

/** Transactions from `address` since `fromBlock` whose receipt says they reverted. */
export async function countRevertedFrom(
  provider: Provider,
  address: string,
  fromBlock: number,
): Promise<number> {
  const head = await provider.getBlockNumber()
  let reverted = 0
  for (let number = fromBlock; number <= head; number++) {
    const block = await provider.getBlock(number, true)
    for (const tx of block?.prefetchedTransactions ?? []) {
      if (tx.from.toLowerCase() !== address.toLowerCase()) continue
      const receipt = await provider.getTransactionReceipt(tx.hash)
      if (receipt?.status !== 1) reverted++
    }
  }
  return reverted
}

/** The demo cases of the game-odds jobs in the stack's JOBS_DIR (the dev chain's). */
export async function gameOddsCases(stack: DevStack): Promise<DemoCase[]> {
  const registry = await loadJobRegistry(stack.settings.JOBS_DIR, 31337)
  const cases = (await buildDemoCases(stack, registry.jobs)).filter((demoCase) =>
    demoCase.job.name.includes('game-odds'),
  )
  if (cases.length === 0) throw new Error('no game-odds job in JOBS_DIR')
  return cases
}

/** `count` requests of the demo cases, round robin (the case of request i is cases[i % length]). */
export function requestsOfCases(cases: readonly DemoCase[], count: number): ConsumerRequest[] {
  return Array.from({ length: count }, (_, index) => {
    const demoCase = cases[index % cases.length]!
    return {
      externalJobId: demoCase.job.externalJobId,
      valueType: demoCase.shape.answerType,
      params: demoCase.params,
      payment: demoCase.minimumPayment ?? 0n,
    }
  })
}

/** Sends the requests from the stack's consumer all at once, or `perSecond` each second. */
export async function sendPaced(
  stack: DevStack,
  requests: ConsumerRequest[],
  perSecond?: number,
): Promise<SentRequest[]> {
  const { consumer, deployer } = stack.contracts
  if (!perSecond) return sendConsumerRequests(consumer, deployer, requests)
  const sent: SentRequest[] = []
  for (let start = 0; start < requests.length; start += perSecond) {
    const began = Date.now()
    sent.push(
      ...(await sendConsumerRequests(consumer, deployer, requests.slice(start, start + perSecond))),
    )
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, 1_000 - (Date.now() - began))))
  }
  return sent
}

/** How many OracleResponse logs the stack's Operator emitted since `fromBlock`. */
export async function oracleResponsesSince(stack: DevStack, fromBlock: number): Promise<number> {
  const { operator, provider } = stack.contracts
  const logs = await provider.getLogs({
    address: await operator.getAddress(),
    topics: [operator.interface.getEvent('OracleResponse')!.topicHash],
    fromBlock,
  })
  return logs.length
}

/**
 * Waits for the requests' fulfilments (by default a bound that only catches hangs) and checks them
 * against the chain: each stored with its case's value, one OracleResponse each since `fromBlock`.
 * `output` is printed when some never came (the runner's log, say).
 */
export async function expectFulfilledOnce(
  stack: DevStack,
  cases: readonly DemoCase[],
  sent: SentRequest[],
  fromBlock: number,
  { output, timeoutMs = 180_000 }: { output?: () => string; timeoutMs?: number } = {},
): Promise<void> {
  const { consumer, provider } = stack.contracts
  const ids = sent.map((request) => request.requestId)
  const fulfilled = await waitForFulfilments(consumer, provider, ids, { fromBlock, timeoutMs })
  if (fulfilled.size < sent.length && output) console.log(output().slice(-4000))
  expect(fulfilled.size).toBe(sent.length)
  expect(await wrongValues(cases, sent, fulfilled)).toEqual([])
  expect(await oracleResponsesSince(stack, fromBlock)).toBe(sent.length)
}

/**
 * A PushedValue the stack's node key may write, and in `jobsDir` a cron job `@every 2s` (id
 * `externalJobId`) writing each tick to it: answers the PushedValue's address.
 */
export async function tickWriterJob(
  stack: DevStack,
  jobsDir: string,
  externalJobId: string,
): Promise<string> {
  const writer = new Wallet(stack.env.NODE_PRIVATE_KEY!).address
  const pushed = await deployPushedValue(stack.contracts, [writer], 'tick test')
  const schedule = '@every 2s'
  const spec = tickWriterSpec({ name: 'pushed-every-2s', externalJobId, schedule, pushed })
  writeFileSync(join(jobsDir, 'pushed.toml'), spec)
  return pushed
}

/** The ticks `pushed` holds, ascending, one entry per write (a tick written twice is there twice). */
export async function ticksWritten(provider: Provider, pushed: string): Promise<number[]> {
  const logs = await provider.getLogs({
    address: pushed,
    topics: [PUSHED_VALUE.getEvent('ValuePushed')!.topicHash],
    fromBlock: 0,
  })
  return logs.map((log) => Number(PUSHED_VALUE.parseLog(log)!.args.tick)).sort((a, b) => a - b)
}
