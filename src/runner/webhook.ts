import { randomUUID, timingSafeEqual } from 'node:crypto'
import type { Queue } from 'bullmq'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { Redis } from 'ioredis'
import type { Settings } from '../config/settings.ts'
import type { Connections } from '../queue/connections.ts'
import { takeCall } from './call-rate.ts'
import { callBase, callRunId, type CallPayload } from './calls.ts'
import { initiatorOf } from './initiators.ts'
import type { JobRegistry, LoadedJob } from './job-registry.ts'
import type { RunStore } from './run-record.ts'

/** One chain's runner as the runs endpoint needs it. */
export interface ChainRuns {
  registry: JobRegistry
  requestsQueue: Queue
  runs: RunStore
}

/**
 * The chains whose webhook jobs the endpoint serves. In `feedrunner start` the adapter's server (which
 * carries the endpoint) listens before the runner has started, so the runner is found when a call
 * comes: undefined until then, and the call is refused with 503.
 */
export type RunnersOf = () => ReadonlyMap<number, ChainRuns> | undefined

export interface RunsRouteOptions {
  runners: RunnersOf
  redis: Redis
  prefix: string
  /** RUNS_API_TOKEN: the operator's bearer token; undefined: only external initiators. */
  operatorToken?: string
  /** RUNS_API_MAX_BODY_BYTES. */
  maxBodyBytes: number
  /** RUNS_API_MAX_CALLS_PER_MINUTE, per caller. */
  maxCallsPerMinute: number
  /** Redis's time (ms), to stamp the run's queue job as a request's is stamped. */
  now: () => number | undefined
}

/** The endpoint's options as the settings give them, for a process whose runner `runners` finds. */
export function runsRouteOptions(
  settings: Settings,
  connections: Connections,
  runners: RunnersOf,
): RunsRouteOptions {
  const clock = connections.clock(settings.QUEUE_PREFIX)
  return {
    runners,
    redis: connections.redis('worker', 'runs endpoint'),
    prefix: settings.QUEUE_PREFIX,
    operatorToken: settings.RUNS_API_TOKEN,
    maxBodyBytes: settings.RUNS_API_MAX_BODY_BYTES,
    maxCallsPerMinute: settings.RUNS_API_MAX_CALLS_PER_MINUTE,
    now: () => clock.now(),
  }
}

export const RUNS_PATH = '/v2/jobs/:externalJobID/runs'
const IDEMPOTENCY_TTL_SECONDS = 24 * 3600

/** The adapter's error shape, for every refusal of the runs endpoint. */
function refuse(reply: FastifyReply, statusCode: number, name: string, message: string) {
  return reply
    .code(statusCode)
    .type('application/json; charset=utf-8')
    .send({ status: 'errored', statusCode, error: { name, message } })
}

interface Target {
  chainId: number
  chain: ChainRuns
  loaded: LoadedJob
  caller: string
}
const targets = new WeakMap<FastifyRequest, Target>()

/**
 * `POST /v2/jobs/<externalJobID>/runs`, as a Chainlink node has it for webhook jobs: the JSON body is
 * the run's `$(jobRun.requestBody)`; the answer is the run's id at once (`runs show` has its result).
 * Who may call is decided before the body is read: an external initiator the spec names (its
 * `X-Chainlink-EA-AccessKey` / `X-Chainlink-EA-Secret`), or the operator's `Authorization: Bearer`
 * token; any other call costs no run. A body over RUNS_API_MAX_BODY_BYTES is refused (413) as its
 * length says so, or as soon as it streams past it. The same body twice is two runs, unless both
 * carry one `Idempotency-Key`. Each caller makes at most RUNS_API_MAX_CALLS_PER_MINUTE calls in any
 * minute (429 past it, before the body is read).
 */
export function registerRunsRoute(app: FastifyInstance, options: RunsRouteOptions): void {
  app.post<{ Params: { externalJobID: string } }>(
    RUNS_PATH,
    {
      bodyLimit: options.maxBodyBytes,
      onRequest: async (request, reply) => {
        const refusal = await authorise(request, options)
        if (refusal) return refuse(reply, refusal.statusCode, refusal.name, refusal.message)
        const { caller } = targets.get(request)!
        const { redis, prefix, maxCallsPerMinute } = options
        const tooMany = await takeCall(redis, prefix, caller, maxCallsPerMinute)
        if (tooMany) {
          reply.header('retry-after', String(tooMany.retryAfterSeconds))
          return refuse(reply, 429, 'TooManyRequests', tooMany.message)
        }
      },
      errorHandler: (error, _request, reply) => {
        const { statusCode = 500, code } = error as { statusCode?: number; code?: string }
        if (code === 'FST_ERR_CTP_BODY_TOO_LARGE')
          return refuse(
            reply,
            413,
            'BodyTooLarge',
            `the body is larger than RUNS_API_MAX_BODY_BYTES (${options.maxBodyBytes} bytes)`,
          )
        if (statusCode < 500) return refuse(reply, statusCode, 'BadRequest', error.message)
        return refuse(reply, 500, 'InternalError', 'the run could not be added')
      },
    },
    async (request, reply) => {
      const target = targets.get(request)!
      const key = request.headers['idempotency-key']
      const idempotent = typeof key === 'string' && key.length > 0 && key.length <= 200
      const runId = callRunId(target.loaded.externalJobId, idempotent ? key : randomUUID())
      if (idempotent) {
        const first = await options.redis.set(
          `${options.prefix}:calls:${runId}`,
          '1',
          'EX',
          IDEMPOTENCY_TTL_SECONDS,
          'NX',
        )
        if (first !== 'OK') return reply.code(200).send({ data: { id: runId, repeated: true } })
      }
      const payload: CallPayload = {
        kind: 'call',
        chainId: target.chainId,
        externalJobId: target.loaded.externalJobId,
        runId,
        caller: target.caller,
        requestBody: request.body ?? null,
      }
      await target.chain.runs.create(runId, {
        ...callBase(payload),
        job: target.loaded.name,
        state: 'received',
      })
      await target.chain.requestsQueue.add('call', payload, {
        jobId: `call-${runId}`,
        ...(options.now() === undefined ? {} : { timestamp: options.now() }),
      })
      return reply.code(200).send({ data: { id: runId } })
    },
  )
}

/** Why a call may not start a run (status, name, words), or undefined when it may. */
async function authorise(
  request: FastifyRequest,
  options: RunsRouteOptions,
): Promise<{ statusCode: number; name: string; message: string } | undefined> {
  const { externalJobID } = request.params as { externalJobID: string }
  const byChain = options.runners()
  if (!byChain)
    return {
      statusCode: 503,
      name: 'Unavailable',
      message: "this process's runner has not started yet: try again in a few seconds",
    }
  const found = webhookJob(byChain, externalJobID.toLowerCase())
  if (!found)
    return {
      statusCode: 404,
      name: 'NotFound',
      message: `no webhook job with externalJobID ${externalJobID} is served here`,
    }
  const accessKey = request.headers['x-chainlink-ea-accesskey']
  const secret = request.headers['x-chainlink-ea-secret']
  if (typeof accessKey === 'string' && typeof secret === 'string') {
    const name = await initiatorOf(options.redis, options.prefix, accessKey, secret)
    if (!name)
      return {
        statusCode: 401,
        name: 'Unauthorized',
        message: 'the access key and secret are no external initiator',
      }
    const spec = found.loaded.job.spec
    const allowed = spec.type === 'webhook' ? (spec.externalInitiators ?? []) : []
    if (!allowed.some((initiator) => initiator.name === name))
      return {
        statusCode: 403,
        name: 'Forbidden',
        message: `external initiator ${name} is not in job ${found.loaded.name}'s externalInitiators`,
      }
    targets.set(request, { ...found, caller: name })
    return undefined
  }
  if (bearerMatches(request.headers.authorization, options.operatorToken)) {
    targets.set(request, { ...found, caller: 'operator' })
    return undefined
  }
  return {
    statusCode: 401,
    name: 'Unauthorized',
    message:
      'send an external initiator\'s X-Chainlink-EA-AccessKey and X-Chainlink-EA-Secret, or "Authorization: Bearer <RUNS_API_TOKEN>"',
  }
}

function bearerMatches(header: string | undefined, token: string | undefined): boolean {
  if (token === undefined || header === undefined) return false
  const given = Buffer.from(header.replace(/^Bearer\s+/i, ''))
  const kept = Buffer.from(token)
  return given.length === kept.length && timingSafeEqual(given, kept)
}

function webhookJob(
  byChain: ReadonlyMap<number, ChainRuns>,
  externalJobId: string,
): Omit<Target, 'caller'> | undefined {
  for (const [chainId, chain] of byChain) {
    const loaded = chain.registry.jobs.find(
      (job) => job.externalJobId === externalJobId && job.job.spec.type === 'webhook',
    )
    if (loaded) return { chainId, chain, loaded }
  }
  return undefined
}
