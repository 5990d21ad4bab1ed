import type { Redis, RedisOptions } from 'ioredis'
import { z } from 'zod'
import type { HealthCheck } from './health.ts'

const RPC_TIMEOUT_MS = 2_000

/** The reason an error gives, without addresses or URLs (an RPC URL may carry an API key). */
function errorCode(error: unknown): string {
  const cause = (error as { cause?: { code?: unknown } } | undefined)?.cause
  const code = (error as { code?: unknown } | undefined)?.code ?? cause?.code
  if (typeof code === 'string' && /^[A-Z_]+$/.test(code)) return code
  if (error instanceof Error && error.name === 'TimeoutError') return 'timeout'
  return 'error'
}

/**
 * Redis answers PING, on a connection of the process's (src/queue/connections.ts: it reconnects in
 * the background and reports the outage); the caller closes it. A check waits at most a second.
 */
export function redisCheck(redis: Redis): HealthCheck {
  return redisPingCheck(redis)
}

/**
 * Options of the check's own connection (Connections.redis('client', ..., REDIS_CHECK_OPTIONS)):
 * it sees an outage at once and the recovery within a second or two.
 */
export const REDIS_CHECK_OPTIONS: RedisOptions = {
  connectTimeout: 1_000,
  retryStrategy: (attempt) => Math.min(attempt * 100, 1_000),
}

function redisPingCheck(redis: Redis): HealthCheck {
  return {
    name: 'redis',
    async check() {
      if (redis.status !== 'ready') await readyWithin(redis, 1_000)
      let timer: NodeJS.Timeout | undefined
      try {
        await Promise.race([
          redis.ping(),
          new Promise((_, reject) => {
            timer = setTimeout(() => reject(new Error('no answer within 1 s')), 1_000)
          }),
        ])
      } catch (error) {
        throw new Error(`Redis does not answer (${errorCode(error)})`)
      } finally {
        clearTimeout(timer)
      }
    },
  }
}

/** Waits for a connection that is (re)connecting, briefly: a first check right after start should pass. */
function readyWithin(redis: Redis, timeoutMs: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const status = redis.status
    const timer = setTimeout(() => {
      redis.off('ready', onReady)
      reject(new Error(`Redis is not connected (${status})`))
    }, timeoutMs)
    const onReady = () => {
      clearTimeout(timer)
      resolve()
    }
    redis.once('ready', onReady)
  })
}

const blockNumberAnswer = z.object({ result: z.string().regex(/^0x[0-9a-f]+$/i) })

/** The RPC node's head, with one plain `eth_blockNumber` (a ws(s) URL is asked over http(s)). */
export async function rpcHead(rpcUrl: string, timeoutMs = RPC_TIMEOUT_MS): Promise<number> {
  const httpUrl = rpcUrl.replace(/^ws(s?):/, 'http$1:')
  let response: Response
  try {
    response = await fetch(httpUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_blockNumber', params: [] }),
      signal: AbortSignal.timeout(timeoutMs),
    })
  } catch (error) {
    throw new Error(`the RPC node does not answer (${errorCode(error)})`)
  }
  if (!response.ok) throw new Error(`the RPC node answered HTTP ${response.status}`)
  const parsed = blockNumberAnswer.safeParse(await response.json().catch(() => undefined))
  if (!parsed.success)
    throw new Error('the RPC node answered eth_blockNumber without a block number')
  return Number(parsed.data.result)
}

/** The RPC node answers `eth_blockNumber`; a runner's check is named by its chain (`chain-137`). */
export function rpcCheck(rpcUrl: string, name = 'rpc'): HealthCheck {
  return {
    name,
    async check() {
      await rpcHead(rpcUrl)
    },
  }
}

/** A BullMQ worker, as far as health is concerned. */
export interface WorkerLike {
  readonly name: string
  isRunning(): boolean
  /** A runner's worker is paused while its process owns no sender key (it stands by to take one). */
  isPaused?(): boolean
  readonly closing?: Promise<void> | undefined
}

/**
 * Every worker of a part runs and none is closing. Part of liveness too: a closed worker takes no
 * more jobs until the process restarts.
 */
export function workersCheck(name: string, workers: () => readonly WorkerLike[]): HealthCheck {
  return {
    name,
    live: true,
    async check() {
      const stopped = workers().filter(
        (worker) =>
          worker.closing !== undefined || (!worker.isRunning() && worker.isPaused?.() !== true),
      )
      if (stopped.length > 0)
        throw new Error(`not running: ${stopped.map((worker) => worker.name).join(', ')}`)
    },
  }
}

/** What a chain check reads of the chain's endpoint pool (src/chain/endpoints/pool.ts). */
export interface ChainEndpointsView {
  state(): 'ok' | 'degraded' | 'down'
  readonly endpoints: ReadonlyArray<{
    readonly index: number
    readonly sendOnly: boolean
    readonly state: { readonly up: boolean; readonly reason: string | undefined }
  }>
}

/**
 * A chain's RPC endpoints, as its pool sees them: ready while one answers (`degraded` in the detail
 * when only one of several is left), not ready with none. Endpoints are named by their place in the
 * chain's list, never by URL.
 */
export function chainCheck(chainId: number, pool: ChainEndpointsView): HealthCheck {
  return {
    name: `chain-${chainId}`,
    async check() {
      const out = pool.endpoints
        .filter((endpoint) => !endpoint.state.up)
        .map((endpoint) => `endpoint ${endpoint.index} ${endpoint.state.reason ?? 'out'}`)
      const state = pool.state()
      const readers = pool.endpoints.filter((endpoint) => !endpoint.sendOnly).length
      if (state === 'down')
        throw new Error(`down: no RPC endpoint of chain ${chainId} answers (${out.join(', ')})`)
      if (state === 'degraded')
        return `degraded: 1 of ${readers} RPC endpoints left (${out.join(', ')})`
      return out.length > 0 ? `send-only ${out.join(', ')}` : undefined
    },
  }
}
