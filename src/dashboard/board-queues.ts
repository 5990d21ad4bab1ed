import { createBullBoard } from '@bull-board/api'
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter'
import { FastifyAdapter } from '@bull-board/fastify'
import { Queue } from 'bullmq'
import type { Redis } from 'ioredis'
import type { Connections } from '../queue/connections.ts'
import type { Logger } from '../config/logger.ts'
import { FEED_FAMILIES } from '../config/settings.ts'
import { fetchQueueName } from '../queue/names.ts'
import { RunStore } from '../runner/run-record.ts'
import { queueNames, type StatusReport } from '../runner/status.ts'

/** New sender keys' queues appear on the board within this long. */
const QUEUE_SCAN_INTERVAL_MS = 5_000

/**
 * The queues the dashboard shows: Bull Board over every feedrunner queue, and the report of their
 * depths and the recent runs. The fetch queues are known at start; each chain's requests queue and
 * each sender key's queue are created by the runners, maybe after the adapter starts, so they are
 * found by a scan (at most once per interval).
 */
export class BoardQueues {
  /** Bull Board's routes, to register under `queuesPath`. */
  readonly serverAdapter = new FastifyAdapter()
  private readonly queues = new Map<string, Queue>()
  private readonly board: ReturnType<typeof createBullBoard>
  private readonly runs: RunStore
  private lastScan = 0

  constructor(
    private readonly connections: Connections,
    private readonly connection: Redis,
    private readonly prefix: string,
    private readonly readOnly: boolean,
    paths: { path: string; queuesPath: string },
    private readonly logger: Logger,
  ) {
    this.serverAdapter.setBasePath(paths.queuesPath)
    this.board = createBullBoard({
      queues: [],
      serverAdapter: this.serverAdapter,
      options: {
        uiConfig: {
          boardTitle: 'feedrunner',
          miscLinks: [{ text: 'Recent runs', url: paths.path }],
        },
      },
    })
    this.runs = new RunStore(connection, `${prefix}:runner`)
    for (const name of FEED_FAMILIES.map(fetchQueueName)) this.add(name)
  }

  private add(name: string): void {
    if (this.queues.has(name)) return
    const queue = this.connections.watch(
      new Queue(name, { connection: this.connection, prefix: this.prefix }),
      `dashboard ${name}`,
    )
    this.queues.set(name, queue)
    this.board.addQueue(
      new BullMQAdapter(queue, { readOnlyMode: this.readOnly, allowRetries: !this.readOnly }),
    )
  }

  /** Adds the queues the runners created since the last scan. */
  async scan(): Promise<void> {
    if (Date.now() - this.lastScan < QUEUE_SCAN_INTERVAL_MS) return
    this.lastScan = Date.now()
    try {
      for (const name of await queueNames(this.connection, this.prefix)) this.add(name)
    } catch (error) {
      this.logger.warn(
        { err: error instanceof Error ? error.message : String(error) },
        'dashboard could not list the transaction queues',
      )
    }
  }

  /** Depths and recent runs, from the board's own Queue objects (readStatus opens new ones per call). */
  async report(): Promise<StatusReport> {
    await this.scan()
    const depths = await Promise.all(
      [...this.queues].map(async ([name, queue]) => {
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
    return { queues: depths, runs: await this.runs.recent(50) }
  }

  async close(): Promise<void> {
    await Promise.allSettled([...this.queues.values()].map((queue) => queue.close()))
  }
}
