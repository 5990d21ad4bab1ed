import { afterAll, describe, expect, it } from 'vitest'
import { Queue, Worker } from 'bullmq'
import { waitFor } from '../../src/dev/process.ts'
import { metricsText } from '../../src/metrics/index.ts'
import { createRedisConnection } from '../../src/queue/connection.ts'
import { Connections } from '../../src/queue/connections.ts'
import { deleteKeys } from '../adapter/support.ts'
import { testRedisUrl, uniquePrefix, untilReady } from '../support/redis.ts'

const prefix = uniquePrefix('lost-locks')
afterAll(() => deleteKeys(testRedisUrl(), `${prefix}:*`))

interface Line {
  level: string
  message: string
}

/**
 * A job whose lock lapsed (Redis away past the lock's duration, or a paused process) is run again by
 * BullMQ's stalled-job check, and its run is kept once by its record: the worker's errors that say
 * so are part of an outage already reported. They are told by BullMQ's own signs (the
 * `lockRenewalFailed` event, the settling call's error code), counted, and logged at debug; an error
 * that only reads like one is still an error.
 */
describe("a worker's lapsed job locks", () => {
  it('are counted and logged at debug, told by kind; another error with the same words is logged as an error', async () => {
    const lines: Line[] = []
    const at = (level: string) => (_fields: Record<string, unknown>, message: string) =>
      void lines.push({ level, message })
    const connections = new Connections(
      { REDIS_URL: testRedisUrl(), OUTAGE_REPORT_INTERVAL_MS: 60_000, QUEUE_PREFIX: prefix },
      { warn: at('warn'), info: at('info'), error: at('error'), debug: at('debug') },
    )
    const admin = createRedisConnection(testRedisUrl(), 'client')
    const queueName = 'lost-locks'
    const queue = new Queue(queueName, { connection: admin, prefix })
    let release: () => void = () => {}
    const released = new Promise<void>((resolve) => (release = resolve))
    let started = false
    const worker = connections.watch(
      new Worker(
        queueName,
        async () => {
          started = true
          await released
        },
        {
          connection: connections.redis('worker', 'lost-locks worker'),
          prefix,
          lockDuration: 2_000,
          stalledInterval: 60_000,
        },
      ),
      'lost-locks worker',
    )
    try {
      await untilReady(admin)
      const job = await queue.add('held', {})
      await waitFor('the job taken', async () => started, 60_000, 20)
      // The lock is gone, as when it expired while Redis was away: the next renewal fails.
      await admin.del(`${prefix}:${queueName}:${job.id}:lock`)
      const debug = () => lines.filter((line) => line.level === 'debug')
      await waitFor('the renewal failed', async () => debug().length >= 1, 60_000, 50)
      // Settling the job finds its lock gone too: BullMQ's error code says so.
      release()
      await waitFor('the settling failed', async () => debug().length >= 2, 60_000, 50)
      expect(debug()[0]!.message).toBe(`lost-locks worker: could not renew lock for job ${job.id}`)
      expect(debug()[1]!.message).toMatch(/^lost-locks worker: Missing lock for job/)
      expect(lines.filter((line) => line.level === 'error')).toEqual([])
      const counted = new RegExp(
        `feedrunner_queue_lost_locks_total\\{queue="${queueName}"\\} (\\d+)`,
      ).exec(await metricsText())
      expect(Number(counted?.[1])).toBeGreaterThanOrEqual(2)

      // Words are not a kind: the same text from something else is an error, said as one.
      worker.emit('error', new Error(`could not renew lock for job ${job.id}`))
      expect(lines.filter((line) => line.level === 'error').map((line) => line.message)).toEqual([
        `lost-locks worker: could not renew lock for job ${job.id}`,
      ])
    } finally {
      release()
      await worker.close()
      await queue.close()
      admin.disconnect()
      await connections.close()
    }
  })
})
