import { Queue } from 'bullmq'
import type { FastifyInstance } from 'fastify'
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
