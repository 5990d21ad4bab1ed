import type { Log, Provider } from 'ethers'
import { readLatestRound } from '../chain/flux/aggregator.ts'
import { getEndpoint } from '../feeds/catalog/index.ts'
import { reduce } from '../reduce/index.ts'
import { demoPath, fetchEnvelope } from './demo.ts'
import { DEV_PUSH_FEEDS, type PushContracts, type PushFeed } from './push-feeds.ts'
import { PUSHED_VALUE } from './pushed-value.ts'
import type { DevStack } from './stack.ts'

/** One push job as the demo found it on chain. */
export interface PushCheck {
  feed: PushFeed
  /** The job's name, when the stack's runner serves it. */
  job?: string
  /** Where it writes. */
  address: string
  /** The floor price times 100, as the feed service answers it (reduced here, not by the adapter). */
  expected: bigint
  /** What the feed service said, in words: `floor_price 9.5 × 100`. */
  source: string
  /** The value read from the chain, when one was found. */
  actual?: bigint
  /** What was read from the chain, in words (or why nothing was). */
  checked: string
  ok: boolean
}

const VALUE_PUSHED = PUSHED_VALUE.getEvent('ValuePushed')!.topicHash

/**
 * Checks each push job of jobs/push/ on the stack's chain, all at once, each within `timeoutMs`: a
 * ValuePushed of a cron tick after the check began; a webhook call made here with the stack's
 * operator token, then its ValuePushed; the aggregator's latest answered round. Each value read
 * must be the feed service's floor price, times 100.
 */
export async function runPushChecks(stack: DevStack, timeoutMs = 60_000): Promise<PushCheck[]> {
  const contracts = stack.pushContracts
  if (!contracts) throw new Error('this stack deployed no push contracts (startDevStack pushJobs)')
  const fromBlock = (await stack.contracts.provider.getBlockNumber()) + 1
  return Promise.all(
    DEV_PUSH_FEEDS.map((feed) => checkFeed(stack, contracts, feed, { fromBlock, timeoutMs })),
  )
}

async function checkFeed(
  stack: DevStack,
  contracts: PushContracts,
  feed: PushFeed,
  bounds: { fromBlock: number; timeoutMs: number },
): Promise<PushCheck> {
  const address = contracts[feed.contract]
  const loaded = stack.runner?.allJobs.jobs.find((job) => job.externalJobId === feed.externalJobId)
  const { expected, source } = await floorOnFeedService(stack, feed.collection)
  const base = { feed, address, expected, source, ...(loaded ? { job: loaded.name } : {}) }
  const found = await readFeed(stack, feed, address, bounds).catch((error: unknown) => ({
    checked: error instanceof Error ? error.message : String(error),
    actual: undefined,
  }))
  const notLoaded = loaded
    ? ''
    : ` (no job the runner serves has externalJobID ${feed.externalJobId}, jobs/push/${feed.file})`
  return {
    ...base,
    ...found,
    checked: `${found.checked}${found.actual === undefined ? notLoaded : ''}`,
    ok: found.actual === expected,
  }
}

/** What the feed's contract holds, read from the chain, in words and as a value. */
async function readFeed(
  stack: DevStack,
  feed: PushFeed,
  address: string,
  bounds: { fromBlock: number; timeoutMs: number },
): Promise<{ checked: string; actual?: bigint }> {
  const { provider } = stack.contracts
  const seconds = `${bounds.timeoutMs / 1000} s`
  if (feed.type === 'fluxmonitor') {
    const round = await waitForValue(bounds.timeoutMs, async () => {
      const latest = await readLatestRound(provider, address)
      return latest.roundId > 0n ? latest : undefined
    })
    if (!round) return { checked: `no answered round at ${address} within ${seconds}` }
    return {
      checked: `latestRoundData() at ${address}: round ${round.roundId}, updated ${clock(round.updatedAt * 1000)}`,
      actual: round.answer,
    }
  }
  if (feed.type === 'webhook') await callWebhook(stack, feed)
  const pushed = await waitForValue(bounds.timeoutMs, () =>
    firstValuePushed(provider, address, bounds.fromBlock),
  )
  if (!pushed)
    return {
      checked: `no ValuePushed at ${address} in the ${seconds} after block ${bounds.fromBlock - 1}`,
    }
  const args = PUSHED_VALUE.parseLog(pushed)!.args
  const what = feed.type === 'cron' ? `tick ${clock(Number(args.tick))}` : 'the call'
  return {
    checked: `ValuePushed of ${what} at ${address}: round ${args.roundId}, block ${pushed.blockNumber}`,
    actual: args.answer as bigint,
  }
}

/** The webhook job's run, asked for as an operator would (the stack's RUNS_API_TOKEN). */
async function callWebhook(stack: DevStack, feed: PushFeed): Promise<void> {
  const answer = await fetch(`${stack.adapter.url}/v2/jobs/${feed.externalJobId}/runs`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      authorization: `Bearer ${stack.settings.RUNS_API_TOKEN ?? ''}`,
    },
    body: JSON.stringify({ data: { collection_contract_address: feed.collection } }),
  })
  if (answer.status !== 200)
    throw new Error(
      `the call to POST /v2/jobs/${feed.externalJobId}/runs was answered ${answer.status}: ${(await answer.text()).slice(0, 200)}`,
    )
}

/** The first ValuePushed log of `address` from `fromBlock` on, if any. */
async function firstValuePushed(
  provider: Provider,
  address: string,
  fromBlock: number,
): Promise<Log | undefined> {
  const logs = await provider.getLogs({ address, topics: [VALUE_PUSHED], fromBlock })
  return logs[0]
}

/** Asks `read` every 200 ms until it answers a value, for at most `timeoutMs`. */
async function waitForValue<T>(
  timeoutMs: number,
  read: () => Promise<T | undefined>,
): Promise<T | undefined> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const value = await read().catch(() => undefined)
    if (value !== undefined || Date.now() >= deadline) return value
    await new Promise((resolveDelay) => setTimeout(resolveDelay, 200))
  }
}

/** A collection's floor price as the feed service answers it, times 100 (the PushedValues' 2 decimals). */
async function floorOnFeedService(
  stack: DevStack,
  collection: string,
): Promise<{ expected: bigint; source: string }> {
  const entry = getEndpoint('collection-floor-price')
  const envelope = await fetchEnvelope(stack, entry, { collection_contract_address: collection })
  const path = demoPath(entry)
  const floor = reduce(envelope, { path, aliases: entry.aliases })
  const expected = reduce(envelope, {
    path,
    type: 'int256',
    times: '100',
    aliases: entry.aliases,
    truncation: 'trunc',
  }) as bigint
  return { expected, source: `${path} ${String(floor)} × 100` }
}

/** HH:MM:SS UTC of an epoch-ms instant. */
function clock(epochMs: number): string {
  return `${new Date(epochMs).toISOString().slice(11, 19)} UTC`
}
