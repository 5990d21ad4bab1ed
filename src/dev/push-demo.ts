import { Contract } from 'ethers'
import { readLatestRound } from '../chain/flux/aggregator.ts'
import { FeedrunnerError } from '../config/errors.ts'
import { getEndpoint } from '../feeds/catalog/index.ts'
import { reduce } from '../reduce/index.ts'
import { demoPath, fetchEnvelope } from './demo.ts'
import { DEV_PUSH_FEEDS, type PushFeed } from './push-feeds.ts'
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

/**
 * Checks each push job of jobs/push/ on the stack's chain, all at once, each within `timeoutMs`, as a
 * consumer reads it: the first round a cron tick writes to its PushedValue after the check began; a
 * webhook call made here with the stack's operator token, then the round it writes; the
 * aggregator's latest answered round. Each value read must be the feed service's floor price, times
 * 100.
 */
export async function runPushChecks(stack: DevStack, timeoutMs = 60_000): Promise<PushCheck[]> {
  const contracts = stack.pushContracts
  if (!contracts)
    throw new FeedrunnerError('this stack deployed no push contracts (startDevStack pushJobs)', {
      kind: 'config',
    })
  const pushedValue = (address: string) =>
    new Contract(address, PUSHED_VALUE, stack.contracts.provider)
  const roundsBefore = {
    cron: (await pushedValue(contracts.cron).getFunction('latestRound')()) as bigint,
    webhook: (await pushedValue(contracts.webhook).getFunction('latestRound')()) as bigint,
  }
  return Promise.all(
    DEV_PUSH_FEEDS.map(async (feed) => {
      const address = contracts[feed.contract]
      const loaded = stack.runner?.allJobs.jobs.find(
        (job) => job.externalJobId === feed.externalJobId,
      )
      const { expected, source } = await floorOnFeedService(stack, feed.collection)
      const found = await (
        feed.type === 'fluxmonitor'
          ? readAggregatorRound(stack, address, timeoutMs)
          : readPushedRound(stack, feed, pushedValue(address), {
              after: roundsBefore[feed.type],
              timeoutMs,
            })
      ).catch((error: unknown) => ({ checked: (error as Error).message, actual: undefined }))
      const notLoaded =
        loaded || found.actual !== undefined
          ? ''
          : ` (no job the runner serves has externalJobID ${feed.externalJobId}, jobs/push/${feed.file})`
      return {
        feed,
        address,
        expected,
        source,
        ...(loaded ? { job: loaded.name } : {}),
        ...found,
        checked: `${found.checked}${notLoaded}`,
        ok: found.actual === expected,
      }
    }),
  )
}

/** The aggregator's latest answered round, once there is one. */
async function readAggregatorRound(
  stack: DevStack,
  address: string,
  timeoutMs: number,
): Promise<{ checked: string; actual?: bigint }> {
  const round = await waitForValue(timeoutMs, async () => {
    const latest = await readLatestRound(stack.contracts.provider, address)
    return latest.roundId > 0n ? latest : undefined
  })
  if (!round) return { checked: `no answered round at ${address} within ${timeoutMs / 1000} s` }
  return {
    checked: `latestRoundData() at ${address}: round ${round.roundId}, updated ${clock(round.updatedAt * 1000)}`,
    actual: round.answer,
  }
}

/** The first round written to a PushedValue after round `after` (for the webhook: after a call). */
async function readPushedRound(
  stack: DevStack,
  feed: PushFeed,
  pushed: Contract,
  bounds: { after: bigint; timeoutMs: number },
): Promise<{ checked: string; actual?: bigint }> {
  const address = await pushed.getAddress()
  if (feed.type === 'webhook') await callWebhook(stack, feed)
  const round = await waitForValue(bounds.timeoutMs, async () => {
    const latest = (await pushed.getFunction('latestRound')()) as bigint
    return latest > bounds.after ? bounds.after + 1n : undefined
  })
  if (round === undefined)
    return {
      checked: `no round written to ${address} in the ${bounds.timeoutMs / 1000} s after round ${bounds.after}`,
    }
  const [, answer, , updatedAt] = (await pushed.getFunction('getRoundData')(round)) as bigint[]
  const tick = (await pushed.getFunction('tickOf')(round)) as bigint
  const what = feed.type === 'cron' ? `tick ${clock(Number(tick))}` : 'the call'
  return {
    checked: `getRoundData(${round}) at ${address}: ${what}, updated ${clock(Number(updatedAt) * 1000)}`,
    actual: answer,
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
    throw new FeedrunnerError(
      `the call to POST /v2/jobs/${feed.externalJobId}/runs was answered ${answer.status}: ${(await answer.text()).slice(0, 200)}`,
      { kind: 'upstream' },
    )
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
