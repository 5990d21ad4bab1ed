// The adapter bench's fairness phase (bench/adapter.ts): one client floods the adapter with
// BENCH_FAIRNESS_FLOOD distinct cold requests kept in flight, from 127.0.0.1; another client, from
// 127.0.0.2, sends BENCH_FAIRNESS_SAMPLES cold requests one after another, first alone, then during
// the flood. The figure is the other client's p50 during the flood over its p50 alone (target <= 3x).
import { Agent, request } from 'node:http'
import { feedCatalog } from '../src/feeds/catalog/index.ts'
import { percentile, stagesByGroup, type GroupStages } from './adapter-stages.ts'

const FLOOD = Number(process.env.BENCH_FAIRNESS_FLOOD ?? 600)
const SAMPLES = Number(process.env.BENCH_FAIRNESS_SAMPLES ?? 40)
const FLOODER = '127.0.0.1'
const OTHER = '127.0.0.2'

export interface FairnessFigures {
  flood: number
  samples: number
  /** What limits the flood's fetches: the weather family's rate limit, as the bench's worker runs it. */
  rateLimitPerSecond: string
  alone: { p50: number; p99: number }
  flooded: { p50: number; p99: number }
  ratio: number
  /** The flood's requests answered while the other client was measured, and those that were not 200. */
  floodAnswered: number
  /** The flood's answers a second while the other client was measured: what a fair share costs it. */
  floodPerSecond: number
  floodErrors: number
  /** Where the fetches spent their time (medians, Redis clock): the other client's alone and flooded, the flood's. */
  stages: Record<string, GroupStages>
}

/** The longitude's whole degrees past -170 say which requests a job served (coldBody's `tag`). */
const GROUPS: Record<number, string> = { 1: 'other alone', 2: 'flood', 3: 'other flooded' }

const weather = feedCatalog.weather
const geo = weather.variants!.find((variant) => variant.params.includes('latitude'))!.example

/** One POST from `agent`'s address; resolves with status and milliseconds. */
function post(url: string, agent: Agent, body: string): Promise<{ status: number; ms: number }> {
  const started = performance.now()
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      {
        method: 'POST',
        agent,
        headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
      },
      (res) => {
        res.resume()
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, ms: performance.now() - started }),
        )
      },
    )
    req.on('error', reject)
    req.end(body)
  })
}

/** A forecast no one asked for yet: each `tag` and `index` another place, so every request is cold. */
function coldBody(tag: number, index: number): string {
  const latitude = (-80 + ((index * 7919) % 16_000) / 100).toFixed(4)
  const longitude = (-170 + tag + (index % 97) / 1000).toFixed(4)
  return JSON.stringify({
    id: String(index),
    data: { endpoint: 'weather', ...geo, latitude, longitude },
  })
}

/** The other client's cold requests, one after another; sorted milliseconds. */
async function otherClient(url: string, agent: Agent, tag: number): Promise<number[]> {
  const times: number[] = []
  for (let index = 0; index < SAMPLES; index++) {
    const answer = await post(url, agent, coldBody(tag, index))
    if (answer.status !== 200)
      throw new Error(`the other client's request answered ${answer.status}`)
    times.push(answer.ms)
  }
  return times.sort((a, b) => a - b)
}

export async function fairnessPhase(
  url: string,
  rateLimitPerSecond: string,
  redis: { url: string; prefix: string },
): Promise<FairnessFigures> {
  const flooderAgent = new Agent({ keepAlive: true, maxSockets: FLOOD, localAddress: FLOODER })
  const otherAgent = new Agent({ keepAlive: true, maxSockets: 1, localAddress: OTHER })
  try {
    // The first cold request of a process pays for what it loads; it is not the client's figure.
    await post(url, otherAgent, coldBody(0, 0))
    const alone = await otherClient(url, otherAgent, 1)
    let running = true
    let answered = 0
    let errors = 0
    let sent = 0
    // FLOOD loops, each sending its next distinct request as soon as the last is answered.
    const flood = Array.from({ length: FLOOD }, async () => {
      while (running) {
        const answer = await post(url, flooderAgent, coldBody(2, 1_000_000 + sent++)).catch(() => ({
          status: 0,
          ms: 0,
        }))
        if (!running) break
        answered++
        if (answer.status !== 200) errors++
      }
    })
    // Every loop has a request in flight before the other client starts.
    while (sent < FLOOD) await new Promise((resolve) => setTimeout(resolve, 20))
    const answeredBefore = answered
    const measuring = performance.now()
    const flooded = await otherClient(url, otherAgent, 3)
    const floodPerSecond = (answered - answeredBefore) / ((performance.now() - measuring) / 1000)
    running = false
    await Promise.all(flood)
    const p50Alone = percentile(alone, 50)
    const p50Flooded = percentile(flooded, 50)
    return {
      flood: FLOOD,
      samples: SAMPLES,
      rateLimitPerSecond,
      alone: { p50: p50Alone, p99: percentile(alone, 99) },
      flooded: { p50: p50Flooded, p99: percentile(flooded, 99) },
      ratio: p50Flooded / p50Alone,
      floodAnswered: answered,
      floodPerSecond,
      floodErrors: errors,
      stages: await stagesByGroup(redis.url, redis.prefix, (params) => {
        const tag = Math.floor(Number(params.longitude) + 170)
        return GROUPS[tag]
      }),
    }
  } finally {
    flooderAgent.destroy()
    otherAgent.destroy()
  }
}
