import { Queue, QueueEvents, Worker } from 'bullmq'
import type { Redis } from 'ioredis'
import { createRedisConnection } from '../../queue/connection.ts'
import type { TxJobLookup } from './key-sender.ts'
import type { SenderSettings } from './model.ts'
import { txResultSchema, type TxJobData, type TxResult } from './types.ts'

/** One BullMQ queue per key (`tx-<address>`), the jobs that carry its transactions. */
export interface TxQueues {
  /** The auto-pipelined connection of the keys' tx stores. */
  readonly redis: Redis
  /** Adds (or joins) a job on key `index`'s queue and waits for its result. */
  enqueue(
    index: number,
    jobId: string,
    data: TxJobData,
    resubmit: boolean,
    timeoutMs?: number,
  ): Promise<TxResult>
  /** Starts key `index`'s worker, `maxInFlight` jobs at once. */
  startWorker(
    index: number,
    process: (jobId: string, data: unknown) => Promise<TxResult>,
    onFailed: (jobId: string | undefined, error: Error) => void,
    onError: (error: Error) => void,
  ): Worker<TxJobData, TxResult>
  lookup(index: number): TxJobLookup
  /** Closes the queues, their event streams and every connection opened here (workers apart). */
  close(): Promise<void>
}

export function createTxQueues(
  redisUrl: string,
  queueNames: readonly string[],
  settings: SenderSettings,
): TxQueues {
  // BullMQ does not close connections it was given: every one made here is closed in close().
  const connections: Redis[] = []
  const connect = (autoPipelining = false): Redis => {
    const connection = createRedisConnection(redisUrl, 'worker', {
      enableAutoPipelining: autoPipelining,
    })
    // While Redis is away the connection reconnects by itself; without a listener ioredis prints an
    // "Unhandled error event" with a stack trace for every attempt. Outages surface through onError.
    connection.on('error', () => undefined)
    connections.push(connection)
    return connection
  }
  // Nonce allocations and signed attempts of concurrent jobs leave in one write per tick.
  const redis = connect(true)
  const queues = queueNames.map((name) => {
    const queue = new Queue<TxJobData, TxResult>(name, {
      connection: connect(true),
      prefix: settings.prefix,
    })
    // Every add in flight listens for 'closing'; hundreds of concurrent submits are normal here.
    queue.setMaxListeners(0)
    queue.on('error', () => undefined)
    return queue
  })
  const queueEvents = new Map<number, QueueEvents>()
  const queueOf = (index: number) => queues[index] as Queue<TxJobData, TxResult>

  async function eventsOf(index: number): Promise<QueueEvents> {
    let events = queueEvents.get(index)
    if (!events) {
      events = new QueueEvents(queueNames[index] as string, {
        connection: connect(),
        prefix: settings.prefix,
      })
      events.on('error', () => undefined)
      queueEvents.set(index, events)
      await events.waitUntilReady()
    }
    return events
  }

  return {
    redis,
    async enqueue(index, jobId, data, resubmit, timeoutMs) {
      const events = await eventsOf(index)
      const queue = queueOf(index)
      const job = await queue.add('tx', data, {
        jobId,
        attempts: 5,
        backoff: { type: 'exponential', delay: 500 },
        removeOnComplete: { age: 24 * 3600 },
        removeOnFail: { age: 7 * 24 * 3600 },
      })
      // A resubmit joins the existing job; one that failed for good (say the node was down) runs again.
      if (resubmit && (await queue.getJobState(jobId)) === 'failed')
        await (await queue.getJob(jobId))?.retry('failed')
      return txResultSchema.parse(await job.waitUntilFinished(events, timeoutMs))
    },
    startWorker(index, process, onFailed, onError) {
      const worker = new Worker<TxJobData, TxResult>(
        queueNames[index] as string,
        (job) => process(job.id as string, job.data),
        {
          connection: connect(true),
          prefix: settings.prefix,
          concurrency: settings.maxInFlight,
          lockDuration: settings.lockDurationMs,
          stalledInterval: settings.lockDurationMs,
          maxStalledCount: 10,
        },
      )
      worker.on('failed', (job, error) => onFailed(job?.id, error))
      worker.on('error', onError)
      return worker
    },
    lookup(index) {
      return {
        dataOf: async (jobId) => (await queueOf(index).getJob(jobId))?.data,
        async isLive(jobId) {
          const state = await queueOf(index).getJobState(jobId)
          return state !== 'failed' && state !== 'completed' && state !== 'unknown'
        },
      }
    },
    async close() {
      await Promise.all([...queueEvents.values()].map((events) => events.close()))
      await Promise.all(queues.map((queue) => queue.close()))
      await Promise.all(
        connections.map((connection) => connection.quit().catch(() => connection.disconnect())),
      )
    },
  }
}
