import type {
  FastifyInstance,
  FastifyReply,
  FastifyRequest,
  HookHandlerDoneFunction,
} from 'fastify'
import type { Connections } from '../queue/connections.ts'
import type { Logger } from '../config/logger.ts'
import type { Settings } from '../config/settings.ts'
import { BoardQueues } from './board-queues.ts'
import { renderRunsPage } from './runs-page.ts'
import { requireToken, type DashboardAccess } from './access.ts'

export interface Dashboard {
  /** The recent-runs page. */
  readonly path: string
  /** Bull Board. */
  readonly queuesPath: string
  close(): Promise<void>
}

/**
 * The dashboard on the adapter's server: Bull Board over every feedrunner queue (requests, fetch-<family>,
 * one tx queue per sender key; read-only unless DASHBOARD_READ_ONLY=false) at `<DASHBOARD_PATH>/queues`,
 * and the recent runs with the queue depths at `<DASHBOARD_PATH>`. Call before the server listens.
 */
export async function mountDashboard(
  api: FastifyInstance,
  settings: Settings,
  connections: Connections,
  logger: Logger,
  access: DashboardAccess,
): Promise<Dashboard> {
  const path = settings.DASHBOARD_PATH
  const queuesPath = `${path}/queues`
  const readOnly = settings.DASHBOARD_READ_ONLY
  const queues = new BoardQueues(
    connections,
    connections.redis('client', 'dashboard'),
    settings.QUEUE_PREFIX,
    readOnly,
    { path, queuesPath },
    logger,
  )
  await api.register(async (scope) => {
    // Every page, asset and API call of the dashboard, before anything is read from Redis.
    if (access.kind === 'token')
      scope.addHook('onRequest', (request, reply) => requireToken(request, reply, access.digest))
    // The framework answers everything as JSON; the dashboard's pages and assets carry their own types.
    scope.addHook(
      'preHandler',
      (_request: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction) => {
        reply.removeHeader('content-type')
        done()
      },
    )
    scope.addHook('onRequest', async () => {
      await queues.scan()
    })
    await scope.register(queues.serverAdapter.registerPlugin(), { prefix: queuesPath })
    scope.get(path, async (_request, reply) => runsPage(queues, reply, { queuesPath, readOnly }))
  })
  logger.info({ path, queuesPath, readOnly, access: access.kind }, 'dashboard mounted')
  return { path, queuesPath, close: () => queues.close() }
}

/** The recent-runs page, or a 503 saying Redis could not be read. */
async function runsPage(
  queues: BoardQueues,
  reply: FastifyReply,
  page: { queuesPath: string; readOnly: boolean },
): Promise<FastifyReply> {
  try {
    const report = await queues.report()
    return reply.type('text/html; charset=utf-8').send(renderRunsPage(report, page))
  } catch (error) {
    return reply
      .code(503)
      .type('text/plain; charset=utf-8')
      .send(
        `feedrunner dashboard: cannot read the queues and runs from Redis (${error instanceof Error ? error.message : String(error)})`,
      )
  }
}
