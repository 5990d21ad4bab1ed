import { createServer, type Server } from 'node:http'
import { createGzip } from 'node:zlib'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { parseSettings } from '../../src/config/settings.ts'
import { feedCatalog } from '../../src/feeds/catalog/index.ts'
import { fetchFeed } from '../../src/feeds/client.ts'
import { UpstreamError } from '../../src/feeds/upstream-error.ts'
import { TaskError } from '../../src/pipeline/index.ts'
import { runTask } from '../pipeline/support/task.ts'

/**
 * A gzip bomb: 256 MiB of JSON whitespace sent as about 250 kB with `content-encoding: gzip`. The
 * fetch worker's client (fetch, which decodes gzip) counts the bytes it decodes against
 * FETCH_MAX_RESPONSE_BYTES, not the bytes on the wire; the pipeline's http task does not ask for
 * gzip and reads what it is sent as bytes, under its own cap.
 */
const DECODED_BYTES = 256 * 1024 * 1024

async function gzipBomb(): Promise<Buffer> {
  const gzip = createGzip({ level: 9 })
  const chunks: Buffer[] = []
  gzip.on('data', (chunk: Buffer) => chunks.push(chunk))
  const done = new Promise((resolve) => gzip.on('end', resolve))
  const block = Buffer.alloc(1024 * 1024, ' ')
  for (let written = 0; written < DECODED_BYTES; written += block.length) {
    if (!gzip.write(block)) await new Promise((resolve) => gzip.once('drain', resolve))
  }
  gzip.end()
  await done
  return Buffer.concat(chunks)
}

let server: Server
let url: string
let bomb: Buffer
let served = 0

beforeAll(async () => {
  bomb = await gzipBomb()
  server = createServer((_request, response) => {
    served++
    response.writeHead(200, {
      'content-type': 'application/json',
      'content-encoding': 'gzip',
      'content-length': bomb.length,
    })
    response.end(bomb)
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  url = `http://127.0.0.1:${(server.address() as { port: number }).port}`
}, 60_000)
afterAll(async () => {
  server.closeAllConnections()
  await new Promise((resolve) => server.close(resolve))
})

async function failure<T>(run: Promise<unknown>, type: new (...args: never[]) => T): Promise<T> {
  const error = await run.then(
    () => undefined,
    (caught: unknown) => caught,
  )
  expect(error).toBeInstanceOf(type)
  return error as T
}

describe('a gzip bomb', () => {
  it('is small on the wire and large decoded', () => {
    // Under the fetch cap (2 MiB) on the wire: only the decoded bytes can reach it.
    expect(bomb.length).toBeLessThan(1024 * 1024)
  })

  it('from the feed service: the fetch stops at FETCH_MAX_RESPONSE_BYTES of decoded bytes, not retried', async () => {
    const settings = parseSettings({ SPORTS_URL: url, FEED_API_KEY: 'gzip-bomb-key-8a9b' })
    const before = served
    const error = await failure(
      fetchFeed('game-odds', feedCatalog['game-odds'].example, { settings }),
      UpstreamError,
    )
    expect(error.message).toContain(
      `the feed service sent more than ${settings.FETCH_MAX_RESPONSE_BYTES} bytes (FETCH_MAX_RESPONSE_BYTES)`,
    )
    expect(error.retryable).toBe(false)
    expect(served - before).toBe(1)
  })

  it('to an http task: read as the bytes sent, under HTTP_TASK_MAX_RESPONSE_BYTES, and refused', async () => {
    const error = await failure(runTask('http', { method: 'GET', url: `${url}/bomb` }), TaskError)
    // Sent as about 250 kB, over the task's 32 KiB cap before any of it is decoded.
    expect(error.message).toContain('HTTP_TASK_MAX_RESPONSE_BYTES')
    expect(error.retryable).toBe(false)
  })
})
