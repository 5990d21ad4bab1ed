/**
 * The webhook phase: a runner serving one webhook job (`POST /v2/jobs/<externalJobID>/runs`, the
 * operator's bearer token), called BENCH_WEBHOOK_RATE times a second (200) for BENCH_PUSH_SECONDS
 * (10), open loop (each call leaves at its time, whatever the ones before it). The same server's
 * empty route (a POST to a path it does not serve: routing and a 404, nothing else) is called at the
 * same rate just before, as the yardstick (both routes warmed first, a second of calls each): the target is a webhook call's p99 time to its run's id
 * within 3 x the empty route's. Every run the calls started is then waited for in the run records.
 * The runner with its one job idle before the calls is the reference the cron phase's idle CPU is
 * read against. A wrong secret (401, no run) and a 10 MB body (413 before it is read whole) are
 * held by test/runner/webhook.test.ts.
 */
import { randomUUID } from 'node:crypto'
import { RunStore } from '../../../src/runner/run-record.ts'
import { openChain, type Context } from '../load.ts'
import { round, summary } from '../measure.ts'
import { PUSH_SECONDS, WEBHOOK_RATE, step } from '../settings.ts'
import { costsBetween, markCosts, pause, startPushStage, type StretchCosts } from './push-runner.ts'

export interface CallLatencies {
  calls: number
  /** Calls by HTTP status (0: no answer). */
  statuses: Record<string, number>
  latencyMs: { p50: number; p99: number; max: number }
}

export interface WebhookResult {
  ratePerSecond: number
  seconds: number
  emptyRoute: CallLatencies
  webhook: CallLatencies & { runs: number; runsFulfilled: number }
  /** The webhook call's p99 / the empty route's (target: at most 3). */
  p99Ratio: number
  /** Redis commands a call beyond the empty stretch's rate (the run's own work included). */
  redisCommandsPerCall: number
  /** The runner with one webhook job and no call: CPU ms a second, Redis, RPC. */
  idle: StretchCosts
}

/** After the warm-up, the runs it started end before the idle stretch. */
const SETTLE_MS = 5_000
const TOKEN = `bench-${randomUUID()}-${randomUUID()}`
const JOB_ID = randomUUID()

/** Chainlink's webhook example without its bridge: the run multiplies the body's value by 100. */
const SPEC = `type = "webhook"
schemaVersion = 1
name = "bench webhook"
externalJobID = "${JOB_ID}"
observationSource = """
    parse_request [type="jsonparse" path="data,result" data="$(jobRun.requestBody)"]
    multiply      [type="multiply" input="$(parse_request)" times="100"]
    parse_request -> multiply
"""
`

/** `count` calls of `call`, `perSecond` apart, open loop; each answers its status and its body. */
async function paced(
  perSecond: number,
  count: number,
  call: () => Promise<Response>,
): Promise<Array<{ status: number; ms: number; body: string }>> {
  const start = performance.now()
  const calls: Array<Promise<{ status: number; ms: number; body: string }>> = []
  for (let index = 0; index < count; index++) {
    const due = start + (index * 1000) / perSecond
    const wait = due - performance.now()
    if (wait > 1) await pause(wait)
    const sentAt = performance.now()
    calls.push(
      call().then(
        async (answer) => ({
          status: answer.status,
          body: await answer.text(),
          ms: performance.now() - sentAt,
        }),
        () => ({ status: 0, body: '', ms: performance.now() - sentAt }),
      ),
    )
  }
  return Promise.all(calls)
}

function latencies(answers: ReadonlyArray<{ status: number; ms: number }>): CallLatencies {
  const statuses: Record<string, number> = {}
  for (const { status } of answers) statuses[status] = (statuses[status] ?? 0) + 1
  const { p50, p99, max } = summary(answers.map((answer) => answer.ms))
  return {
    calls: answers.length,
    statuses,
    latencyMs: { p50: round(p50, 1), p99: round(p99, 1), max: round(max, 1) },
  }
}

/** Waits (bounded) for the runs of `ids` to end fulfilled; answers how many did. */
async function fulfilledRuns(runs: RunStore, ids: readonly string[]): Promise<number> {
  const deadline = Date.now() + 120_000
  let open = [...ids]
  while (open.length > 0 && Date.now() < deadline) {
    const states = await Promise.all(open.map(async (id) => (await runs.get(id))?.state))
    open = open.filter((_, index) => states[index] !== 'fulfilled' && states[index] !== 'errored')
    if (open.length > 0) await pause(250)
  }
  let fulfilled = 0
  for (const id of ids) if ((await runs.get(id))?.state === 'fulfilled') fulfilled += 1
  return fulfilled
}

export async function runWebhookPhase(ctx: Context): Promise<WebhookResult> {
  const label = 'webhook'
  const stage = await startPushStage(ctx, await openChain(ctx.artifacts), {
    label,
    specs: { 'webhook.toml': SPEC },
    env: { RUNS_API_TOKEN: TOKEN, RUNS_API_MAX_CALLS_PER_MINUTE: '1000000' },
  })
  const { chain, proxy, runner } = stage
  try {
    const count = WEBHOOK_RATE * PUSH_SECONDS
    const post = (path: string) => () =>
      fetch(`${runner.operationsUrl}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${TOKEN}` },
        body: JSON.stringify({ data: { result: 1.5 } }),
      })
    // Both routes warmed first (connections open, code compiled), a second each, not measured.
    step(`${label}: warming both routes`)
    await paced(WEBHOOK_RATE, WEBHOOK_RATE, post(`/v2/jobs/${JOB_ID}/nothing`))
    await paced(WEBHOOK_RATE, WEBHOOK_RATE, post(`/v2/jobs/${JOB_ID}/runs`))
    await pause(SETTLE_MS)
    step(`${label}: idle for ${PUSH_SECONDS} s`)
    const idleFrom = await markCosts(ctx, runner.part.pid, proxy)
    await pause(PUSH_SECONDS * 1000)
    const emptyFrom = await markCosts(ctx, runner.part.pid, proxy)
    step(`${label}: the empty route, ${count} calls at ${WEBHOOK_RATE}/s`)
    const empty = await paced(WEBHOOK_RATE, count, post(`/v2/jobs/${JOB_ID}/nothing`))
    const callsFrom = await markCosts(ctx, runner.part.pid, proxy)
    step(`${label}: the runs endpoint, ${count} calls at ${WEBHOOK_RATE}/s`)
    const calls = await paced(WEBHOOK_RATE, count, post(`/v2/jobs/${JOB_ID}/runs`))
    const ids = calls.flatMap(({ status, body }) =>
      status === 200 ? [(JSON.parse(body) as { data: { id: string } }).data.id] : [],
    )
    const runsFulfilled = await fulfilledRuns(
      new RunStore(ctx.redis, `${ctx.prefix}-${label}:runner`, chain.anvil.chainId),
      ids,
    )
    const callsTo = await markCosts(ctx, runner.part.pid, proxy)
    const emptyCosts = costsBetween(emptyFrom, callsFrom)
    const callCosts = costsBetween(callsFrom, callsTo)
    const emptyRate = emptyCosts.redisCommands / emptyCosts.seconds
    const emptyRoute = latencies(empty)
    const webhook = latencies(calls)
    return {
      ratePerSecond: WEBHOOK_RATE,
      seconds: PUSH_SECONDS,
      emptyRoute,
      webhook: { ...webhook, runs: ids.length, runsFulfilled },
      p99Ratio: round(webhook.latencyMs.p99 / Math.max(0.1, emptyRoute.latencyMs.p99), 2),
      redisCommandsPerCall: round(
        (callCosts.redisCommands - emptyRate * callCosts.seconds) / Math.max(1, ids.length),
        1,
      ),
      idle: costsBetween(idleFrom, emptyFrom),
    }
  } finally {
    await stage.close()
  }
}
