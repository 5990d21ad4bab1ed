import { createBullBoard } from '@bull-board/api'
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter'
import { FastifyAdapter } from '@bull-board/fastify'
import { Queue } from 'bullmq'
import type {
  FastifyInstance,
  FastifyReply,
  FastifyRequest,
  HookHandlerDoneFunction,
} from 'fastify'
import type { Connections } from '../queue/connections.ts'
import type { Logger } from '../config/logger.ts'
import { FEED_FAMILIES, type Settings } from '../config/settings.ts'
import { fetchQueueName } from '../queue/names.ts'
import { RunStore } from '../runner/run-record.ts'
import { queueNames, type StatusReport } from '../runner/status.ts'
import { renderRunsPage } from './runs-page.ts'
import { requireToken, type DashboardAccess } from './access.ts'

/** New sender keys' queues appear on the board within this long. */
const QUEUE_SCAN_INTERVAL_MS = 5_000

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
  const connection = connections.redis('client', 'dashboard')
  const path = settings.DASHBOARD_PATH
  const queuesPath = `${path}/queues`
  const readOnlyMode = settings.DASHBOARD_READ_ONLY
  const prefix = settings.QUEUE_PREFIX
  const queues = new Map<string, Queue>()
  const serverAdapter = new FastifyAdapter()
  serverAdapter.setBasePath(queuesPath)
  const board = createBullBoard({
    queues: [],
    serverAdapter,
    options: {
      uiConfig: { boardTitle: 'feedrunner', miscLinks: [{ text: 'Recent runs', url: path }] },
    },
  })
  const addQueue = (name: string) => {
    if (queues.has(name)) return
    const queue = connections.watch(new Queue(name, { connection, prefix }), `dashboard ${name}`)
    queues.set(name, queue)
    board.addQueue(new BullMQAdapter(queue, { readOnlyMode, allowRetries: !readOnlyMode }))
  }
  for (const name of FEED_FAMILIES.map(fetchQueueName)) addQueue(name)

  // Each chain's requests queue and each sender key's queue are created by the runners, maybe after
  // the adapter starts.
  let lastScan = 0
  const scanTxQueues = async () => {
    if (Date.now() - lastScan < QUEUE_SCAN_INTERVAL_MS) return
    lastScan = Date.now()
    try {
      for (const name of await queueNames(connection, prefix)) addQueue(name)
    } catch (error) {
      logger.warn(
        { err: error instanceof Error ? error.message : String(error) },
        'dashboard could not list the transaction queues',
      )
    }
  }

  const runs = new RunStore(connection, `${prefix}:runner`)
  // The board's own Queue objects, not readStatus (which opens new ones on every call).
  const readReport = async (): Promise<StatusReport> => {
    await scanTxQueues()
    const depths = await Promise.all(
      [...queues].map(async ([name, queue]) => {
        const counts = await queue.getJobCounts(
          'waiting',
          'active',
          'delayed',
          'failed',
          'completed',
        )
        return {
          queue: name,
          waiting: counts.waiting ?? 0,
          active: counts.active ?? 0,
          delayed: counts.delayed ?? 0,
          failed: counts.failed ?? 0,
          completed: counts.completed ?? 0,
        }
      }),
    )
    return { queues: depths, runs: await runs.recent(50) }
  }

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
      await scanTxQueues()
    })
    await scope.register(serverAdapter.registerPlugin(), { prefix: queuesPath })
    scope.get(path, async (_request, reply) => {
      try {
        const report = await readReport()
        return reply
          .type('text/html; charset=utf-8')
          .send(renderRunsPage(report, { queuesPath, readOnly: readOnlyMode }))
      } catch (error) {
        return reply
          .code(503)
          .type('text/plain; charset=utf-8')
          .send(
            `feedrunner dashboard: cannot read the queues and runs from Redis (${error instanceof Error ? error.message : String(error)})`,
          )
      }
    })
  })
  logger.info(
    { path, queuesPath, readOnly: readOnlyMode, access: access.kind },
    'dashboard mounted',
  )
  return {
    path,
    queuesPath,
    async close() {
      await Promise.allSettled([...queues.values()].map((queue) => queue.close()))
    },
  }
}
