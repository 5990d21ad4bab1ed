import { Queue, QueueEvents, Worker } from 'bullmq'
import { reviveErrorText } from '../../config/errors.ts'
import type { Redis } from 'ioredis'
import type { Connections } from '../../queue/connections.ts'
import type { SenderSettings } from './model.ts'
import { txResultSchema, type TxJobData, type TxJobLookup, type TxResult } from './types.ts'

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
  ): Worker<TxJobData, TxResult>
  lookup(index: number): TxJobLookup
  /** Closes the queues, their event streams and every connection opened here (workers apart). */
  close(): Promise<void>
}

export function createTxQueues(
  manager: Connections,
  queueNames: readonly string[],
  settings: SenderSettings,
): TxQueues {
  // BullMQ does not close connections it was given: every one made here is closed in close(). Their
  // errors, and those of the queues and workers on them, report an outage through the manager.
  const connections: Redis[] = []
  const connect = (autoPipelining = false): Redis => {
    const connection = manager.redis('worker', 'tx sender', {
      enableAutoPipelining: autoPipelining,
    })
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
    return manager.watch(queue, `tx queue ${name}`)
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
      manager.watch(events, `tx queue events ${queueNames[index]}`)
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
      const result = await job.waitUntilFinished(events, timeoutMs).catch((error: unknown) => {
        // BullMQ rejects with an Error of the failed reason: a stored error, revived as its kind.
        throw error instanceof Error && error.message.startsWith('{')
          ? reviveErrorText(error.message)
          : error
      })
      return txResultSchema.parse(result)
    },
    startWorker(index, process, onFailed) {
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
      return manager.watch(worker, `tx worker ${queueNames[index]}`)
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
