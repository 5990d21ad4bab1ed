import { Queue } from 'bullmq'
import type {
  FastifyInstance,
  FastifyReply,
  FastifyRequest,
  HookHandlerDoneFunction,
} from 'fastify'
import { z } from 'zod'
import { bridgeRunOf } from '../adapter/bridge-identity.ts'
import type { Logger } from '../config/logger.ts'
import { FEED_FAMILIES, type Settings } from '../config/settings.ts'
import { ENDPOINT_NAMES } from '../feeds/catalog/index.ts'
import { REDIS_CHECK_OPTIONS } from '../health/checks.ts'
import { operateAdapter } from '../health/operate.ts'
import { fetchStatusLabel, observeAdapterRequest } from '../metrics/index.ts'
import { registerHealthRoutes } from '../health/routes.ts'
import type { Connections } from '../queue/connections.ts'
import { fetchQueueName } from '../queue/names.ts'
import { dashboardAccess } from './access.ts'

export interface MountedOperations {
  /** Where the dashboard is, when DASHBOARD_ENABLED. */
  readonly dashboardPath?: string
  close(): Promise<void>
}

/**
 * Everything operators reach on the adapter's server, added before it listens: GET /live and
 * GET /ready, the fetch queues' depths in the process's metrics (the framework serves them on
 * METRICS_PORT), and the dashboard when DASHBOARD_ENABLED=true (loaded only then; behind DASHBOARD_TOKEN
 * when set, and refused off loopback without it).
 */
export async function mountOperations(
  api: FastifyInstance,
  settings: Settings,
  logger: Logger,
  connections: Connections,
  bind: { host: string },
): Promise<MountedOperations> {
  // Decided before the server listens: a dashboard open to the network without a token stops the start.
  const access = settings.DASHBOARD_ENABLED ? dashboardAccess(settings, bind.host) : undefined
  registerHealthRoutes(api)
  observeAdapterRequests(api, logger)
  const connection = connections.redis('client', 'operations')
  const fetchQueues = FEED_FAMILIES.map((family) =>
    connections.watch(
      new Queue(fetchQueueName(family), { connection, prefix: settings.QUEUE_PREFIX }),
      `fetch queue ${family} (metrics)`,
    ),
  )
  const stopOperating = operateAdapter(
    fetchQueues,
    connections.redis('client', 'health check', REDIS_CHECK_OPTIONS),
    connections.clock(settings.QUEUE_PREFIX),
  )
  const dashboard = access
    ? await (await import('./board.ts')).mountDashboard(api, settings, connections, logger, access)
    : undefined
  return {
    ...(dashboard ? { dashboardPath: dashboard.path } : {}),
    async close() {
      await stopOperating()
      await dashboard?.close()
      await Promise.allSettled(fetchQueues.map((queue) => queue.close()))
      connection.disconnect()
    },
  }
}

/**
 * What a bridge call says about the run it belongs to: a Chainlink node (and the runner) sends the job's
 * external id as `id` and the on-chain request under `meta.oracleRequest`. Untrusted input: only
 * values of the expected shapes are taken.
 */
const endpointSchema = z.object({ data: z.object({ endpoint: z.enum(ENDPOINT_NAMES) }) })

interface RequestIdentity {
  endpoint: string
  requestId?: string
  job?: string
}

/**
 * Per answered POST: feedrunner_adapter_requests_total and _duration_seconds by endpoint and status
 * (bounded labels, unlike the framework's own per-request metrics, which label by every parameter),
 * and one debug line per bridge call that belongs to an on-chain request, with
 * its `requestId` and `job` (the external job id), so a run's adapter side is found by the same
 * fields as its runner side. Fetches are shared by equal requests, so the fetch worker's lines carry
 * the fetch job, not a request. The body is read before the framework's validation rewrites `data`.
 */
function observeAdapterRequests(api: FastifyInstance, logger: Logger): void {
  const identities = new WeakMap<FastifyRequest, RequestIdentity>()
  api.addHook(
    'preValidation',
    (request: FastifyRequest, _reply: FastifyReply, done: HookHandlerDoneFunction) => {
      if (request.method === 'POST') {
        const endpoint = endpointSchema.safeParse(request.body)
        identities.set(request, {
          endpoint: endpoint.success ? endpoint.data.data.endpoint : 'unknown',
          ...bridgeRunOf(request.body),
        })
      }
      done()
    },
  )
  api.addHook(
    'onResponse',
    (request: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction) => {
      const identity = identities.get(request)
      if (identity) {
        observeAdapterRequest(
          identity.endpoint,
          fetchStatusLabel(reply.statusCode),
          reply.elapsedTime / 1_000,
        )
        if (identity.requestId) {
          logger.debug(
            {
              requestId: identity.requestId,
              job: identity.job,
              endpoint: identity.endpoint,
              status: reply.statusCode,
              ms: Math.round(reply.elapsedTime),
            },
            'bridge request answered',
          )
        }
      }
      done()
    },
  )
}
