import { request } from 'node:http'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startAdapter, type RunningAdapter } from '../../src/adapter/adapter.ts'
import { parseSettings } from '../../src/config/settings.ts'
import { testRedisUrl, uniquePrefix } from '../support/redis.ts'

const LIMIT = 1_048_576

interface Answer {
  status: number
  body: string
  /** Whether the answer came before the client had sent its whole body. */
  beforeUploadEnded: boolean
}

/**
 * Sends `total` bytes of JSON-looking body in two parts with a pause between, and reads the answer:
 * the pause gives a server that answers mid-upload the time to do so (and close the connection).
 */
function postInTwoParts(url: string, total: number): Promise<Answer> {
  return new Promise((resolve, reject) => {
    let uploadEnded = false
    const req = request(
      url,
      {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'content-length': String(total) },
      },
      (res) => {
        const beforeUploadEnded = !uploadEnded
        const chunks: Buffer[] = []
        // A reset under a write still going out can be reported on the answer once it has begun.
        res.on('error', reject)
        res.on('data', (chunk: Buffer) => chunks.push(chunk))
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            body: Buffer.concat(chunks).toString('utf8'),
            beforeUploadEnded,
          }),
        )
      },
    )
    req.on('error', reject)
    // ...or on the socket itself, once the request has let go of it: a socket error with no listener
    // is an uncaught exception (seen once in CI: write ECONNRESET after the 20 MB upload's answer).
    req.on('socket', (socket) => socket.on('error', reject))
    const half = Math.floor(total / 2)
    req.write(Buffer.alloc(half, 0x20))
    setTimeout(() => {
      req.end(Buffer.alloc(total - half, 0x20), () => (uploadEnded = true))
    }, 500)
  })
}

/**
 * A body over MAX_PAYLOAD_SIZE_LIMIT is answered 413 in the adapter's JSON error shape once the body
 * is read: answered mid-upload, the connection closed under the client, which saw a reset instead
 * (a loaded run of the hostile-input adapter test did).
 */
describe('adapter: a body over the size limit', () => {
  let adapter: RunningAdapter
  const prefix = uniquePrefix('body-limit').replace(/:/g, '.')

  beforeAll(async () => {
    const settings = parseSettings({
      REDIS_URL: testRedisUrl(),
      QUEUE_PREFIX: prefix,
      LOG_LEVEL: 'silent',
    })
    adapter = await startAdapter({
      settings,
      framework: { EA_PORT: 0, METRICS_ENABLED: false, MAX_PAYLOAD_SIZE_LIMIT: LIMIT },
    })
  })
  afterAll(async () => {
    await adapter?.close()
  })

  it('is answered 413 with the JSON error, after the client sent it all', async () => {
    const answer = await postInTwoParts(adapter.url, 5 * LIMIT)
    expect(answer.status).toBe(413)
    expect(JSON.parse(answer.body)).toMatchObject({
      status: 'errored',
      statusCode: 413,
      error: {
        name: 'AdapterInputError',
        message: `the request body is larger than ${LIMIT} bytes`,
      },
    })
    expect(answer.beforeUploadEnded).toBe(false)
  })

  it('past 16 MB is answered without reading the rest: the connection may close under the client', async () => {
    // Only that the process goes on serving: what the client sees of a 20 MB upload is up to timing.
    await postInTwoParts(adapter.url, 20 * LIMIT).catch(() => undefined)
    const small = await postInTwoParts(adapter.url, 2 * LIMIT)
    expect(small.status).toBe(413)
  })
})
