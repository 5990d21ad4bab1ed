import { afterAll, describe, expect, it } from 'vitest'
import { startFeedrunnerProcess, type FeedrunnerProcess } from '../../src/dev/feedrunner-process.ts'
import { freePort } from '../../src/dev/ports.ts'
import { waitFor } from '../../src/dev/process.ts'
import { startPrivateRedis, type PrivateRedis } from '../../src/dev/redis.ts'
import { uniquePrefix } from '../support/redis.ts'
import { jsonLogLines } from '../support/log-lines.ts'

/**
 * An outage of Redis, as `feedrunner start` (adapter and fetch workers, each with several Redis
 * connections) reports it: one line when Redis stops answering, one per OUTAGE_REPORT_INTERVAL_MS
 * while it stays down (set short here, so the test counts lines and never times them), one when it
 * answers again; no stack trace and no other line about the refused connections. A SIGTERM while
 * Redis is away still ends the process, with code 0.
 */
describe('a Redis outage as state changes', () => {
  let redis: PrivateRedis | undefined
  let part: FeedrunnerProcess | undefined

  afterAll(async () => {
    await part?.stop()
    await redis?.stop()
  })

  it('one line down, one per interval while down, one back; SIGTERM while down exits', async () => {
    const port = await freePort()
    redis = await startPrivateRedis({ port })
    part = await startFeedrunnerProcess({
      name: 'feedrunner start',
      args: ['start'],
      env: {
        REDIS_URL: redis.url,
        QUEUE_PREFIX: uniquePrefix('outage'),
        RPC_URL: '',
        SPORTS_URL: 'http://127.0.0.1:9',
        EA_PORT: String(await freePort()),
        METRICS_ENABLED: 'false',
        OPERATIONS_PORT: '0',
        LOG_FORMAT: 'json',
        LOG_LEVEL: 'info',
        OUTAGE_REPORT_INTERVAL_MS: '400',
      },
      ready: 'feedrunner fetch workers running',
    })
    const running = part
    const lines = () => jsonLogLines(running.output())
    const redisLines = (state: string) =>
      lines().filter((line) => line.dependency === 'Redis' && line.state === state)
    const stillDown = () => redisLines('down').filter((line) => line.downMs !== undefined)

    await redis.stop()
    await waitFor('two "still not answering" lines', async () => stillDown().length >= 2, 60_000)
    redis = await startPrivateRedis({ port })
    await waitFor('the "answers again" line', async () => redisLines('up').length >= 1, 60_000)

    // A second outage, and a SIGTERM in the middle of it.
    await redis.stop()
    await waitFor(
      'the second outage line',
      async () => redisLines('down').length - stillDown().length >= 2,
      60_000,
    )
    running.child.kill('SIGTERM')
    const exit = await running.exited
    expect(exit.code, running.output().slice(-3000)).toBe(0)

    const output = running.output()
    const first = redisLines('down').filter((line) => line.downMs === undefined)
    expect(first).toHaveLength(2)
    for (const line of first) {
      expect(line.msg).toContain(`Redis is not answering (REDIS_URL 127.0.0.1:${port})`)
      expect(line.setting).toBe('REDIS_URL')
      expect(line.endpoint).toBe(`127.0.0.1:${port}`)
    }
    const back = redisLines('up')
    expect(back).toHaveLength(1)
    expect(back[0]?.msg).toMatch(
      /^Redis answers again \(REDIS_URL 127\.0\.0\.1:\d+\) after .* down; \d+ failed calls? in all$/,
    )
    expect(back[0]?.failures).toBeGreaterThan(0)
    for (const line of stillDown()) {
      expect(line.msg).toMatch(/still not answering .* \d+ failed calls? since the last line$/)
      expect(typeof line.failures).toBe('number')
    }
    // Nothing else about the outage: no stack trace, no unhandled error event, no line per attempt.
    expect(output).not.toMatch(/\n\s+at .+:\d+:\d+/)
    expect(output).not.toContain('Unhandled error event')
    const aboutRefusals = output
      .split('\n')
      .filter((line) => /ECONNREFUSED|Connection is closed/.test(line))
    expect(aboutRefusals.every((line) => line.includes('"dependency":"Redis"'))).toBe(true)
  }, 180_000)
})
