import { Queue } from 'bullmq'
import type { FastifyInstance, FastifyReply, FastifyRequest, HookHandlerDoneFunction } from 'fastify'
import { z } from 'zod'
import type { Logger } from '../config/logger.ts'
import { FEED_FAMILIES, type Settings } from '../config/settings.ts'
import { operateAdapter } from '../health/operate.ts'
import { registerHealthRoutes } from '../health/routes.ts'
import { createRedisConnection } from '../queue/connection.ts'
import { fetchQueueName } from '../queue/names.ts'

export interface MountedOperations {
  /** Where the dashboard is, when DASHBOARD_ENABLED. */
  readonly dashboardPath?: string
  close(): Promise<void>
}

/**
 * Everything operators reach on the adapter's server, added before it listens: GET /live and
 * GET /ready, the fetch queues' depths in the process's metrics (the framework serves them on
 * METRICS_PORT), and the dashboard when DASHBOARD_ENABLED=true (loaded only then).
 */
export async function mountOperations(api: FastifyInstance, settings: Settings, logger: Logger): Promise<MountedOperations> {
  registerHealthRoutes(api)
  logBridgeRequests(api, logger)
  const connection = createRedisConnection(settings.REDIS_URL, 'client')
  connection.on('error', () => undefined)
  const fetchQueues = FEED_FAMILIES.map((family) => {
    const queue = new Queue(fetchQueueName(family), { connection, prefix: settings.QUEUE_PREFIX })
    queue.on('error', () => undefined)
    return queue
  })
  const stopOperating = operateAdapter(fetchQueues, settings.REDIS_URL)
  const dashboard = settings.DASHBOARD_ENABLED ? await (await import('./board.ts')).mountDashboard(api, settings, connection, logger) : undefined
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
const bridgeBodySchema = z.object({
  id: z.string().regex(/^[0-9a-fA-F-]{1,64}$/).optional(),
  data: z.object({ endpoint: z.string().regex(/^[a-z0-9-]{1,64}$/).optional() }).optional(),
  meta: z.object({ oracleRequest: z.object({ requestId: z.string().regex(/^0x[0-9a-fA-F]{64}$/) }) }),
})

/**
 * One debug line per bridge call that belongs to an on-chain request, with its `requestId` and `job`
 * (the external job id), so a run's adapter side is found by the same fields as its runner side.
 * Fetches are shared by equal requests, so the fetch worker's lines carry the fetch job, not a request.
 */
function logBridgeRequests(api: FastifyInstance, logger: Logger): void {
  api.addHook('onResponse', (request: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction) => {
    if (request.method === 'POST' && logger.isLevelEnabled('debug')) {
      const body = bridgeBodySchema.safeParse(request.body)
      if (body.success) {
        const { id, data, meta } = body.data
        logger.debug({ requestId: meta.oracleRequest.requestId, job: id ?? '(none)', endpoint: data?.endpoint, status: reply.statusCode, ms: Math.round(reply.elapsedTime) }, 'bridge request answered')
      }
    }
    done()
  })
}
