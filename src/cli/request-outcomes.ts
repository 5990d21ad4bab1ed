import type { Contract, Provider } from 'ethers'
import { waitForFulfilments, type Fulfilment, type SentRequest } from '../dev/requests.ts'
import { decodeCallbackAnswer, describeValue } from '../pipeline/index.ts'
import type { FeedJobShape } from '../runner/feed-job.ts'
import { isFinal, type RunRecord, type RunStore } from '../runner/run-record.ts'

// How `feedrunner request` waits for its requests and says how they ended: each answer as it comes,
// then the latencies, the runs that ended without an answer, and those still waiting.

export interface RequestOutcomes {
  fulfilments: ReadonlyMap<string, Fulfilment>
  /** Runs that ended without a fulfilment (errored, refused, cancelled), by request id. */
  ended: ReadonlyMap<string, RunRecord>
}

/**
 * Waits for the requests' fulfilments, each said as it comes (one line each for up to 20 requests,
 * else every tenth); with the run records at hand, a run that ended without one is not waited for.
 */
export async function awaitOutcomes(
  consumer: Contract,
  provider: Provider,
  sent: readonly SentRequest[],
  options: { fromBlock: number; timeoutMs: number; runs?: RunStore; shape: FeedJobShape },
): Promise<RequestOutcomes> {
  const { runs, shape } = options
  const count = sent.length
  const progressEvery = Math.max(1, Math.floor(count / 10))
  const sentAt = new Map(sent.map((item) => [item.requestId, item.sentAt]))
  const ended = new Map<string, RunRecord>()
  let done = 0
  const fulfilments = await waitForFulfilments(
    consumer,
    provider,
    sent.map((item) => item.requestId),
    {
      fromBlock: options.fromBlock,
      timeoutMs: options.timeoutMs,
      ...(runs ? { settledElsewhere: (pending) => endedRuns(runs, pending, ended) } : {}),
      onFulfilled: (fulfilment) => {
        done += 1
        const latency = fulfilment.seenAt - (sentAt.get(fulfilment.requestId) ?? fulfilment.seenAt)
        const value =
          shape.answerType === 'raw'
            ? describeValue(decodeCallbackAnswer(shape.answer, String(fulfilment.value)))
            : String(fulfilment.value)
        if (count <= 20) console.log(`${fulfilment.requestId}  ${value}  (${latency} ms)`)
        else if (done % progressEvery === 0) console.log(`fulfilled ${done}/${count}`)
      },
    },
  )
  return { fulfilments, ended }
}

/** The summary: how many were fulfilled and how fast, why others ended, which still wait; the exit code. */
export function reportOutcomes(
  sent: readonly SentRequest[],
  { fulfilments, ended }: RequestOutcomes,
  timeout: string,
): number {
  const latencies = sent
    .flatMap((item) => {
      const fulfilment = fulfilments.get(item.requestId)
      return fulfilment ? [fulfilment.seenAt - item.sentAt] : []
    })
    .sort((a, b) => a - b)
  const percentile = (p: number) =>
    latencies[Math.min(latencies.length - 1, Math.floor((p / 100) * latencies.length))] ?? 0
  console.log(
    `${fulfilments.size} of ${sent.length} fulfilled${latencies.length ? `; latency p50 ${percentile(50)} ms, p99 ${percentile(99)} ms` : ''}`,
  )
  for (const run of ended.values()) console.error(describeEndedRun(run))
  const waiting = sent.filter(
    (item) => !fulfilments.has(item.requestId) && !ended.has(item.requestId),
  )
  if (waiting.length > 0)
    console.error(
      `not fulfilled within ${timeout} s: ${waiting.map((item) => item.requestId).join(', ')} (see: npx feedrunner runs show <requestId>)`,
    )
  return fulfilments.size === sent.length ? 0 : 1
}

/** Of `pending`, the requests whose run ended without a fulfilment; their records go to `ended`. */
async function endedRuns(
  runs: RunStore,
  pending: readonly string[],
  ended: Map<string, RunRecord>,
): Promise<string[]> {
  const records = await Promise.all(pending.map((id) => runs.get(id).catch(() => undefined)))
  for (const run of records)
    if (run && isFinal(run.state) && run.state !== 'fulfilled') ended.set(run.requestId, run)
  return records.flatMap((run) => (run && ended.has(run.requestId) ? [run.requestId] : []))
}

/**
 * One run that ended without a fulfilment, root cause first: the first task that failed on its own
 * (the tasks after it fail only because their input did), then the run's own reason when it says more.
 */
export function describeEndedRun(run: RunRecord): string {
  const tasks = run.tasks ?? []
  const failed = tasks.filter((task) => task.error !== undefined)
  const root = failed.find((task) => !/^input from \S+ failed/.test(task.error ?? '')) ?? failed[0]
  const lines = [`${run.requestId} ${run.state} (job ${run.job})`]
  if (root) {
    lines.push(`  cause: task ${root.id} (${root.type}): ${root.error}`)
    const after = failed.filter((task) => task !== root).map((task) => task.id)
    if (after.length > 0) lines.push(`  so these failed too: ${after.join(', ')}`)
  } else if (run.reason) lines.push(`  reason: ${run.reason}`)
  lines.push(`  details: npx feedrunner runs show ${run.requestId.slice(0, 12)}`)
  return lines.join('\n')
}
