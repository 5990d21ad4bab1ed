import { createServer, type IncomingHttpHeaders, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { errors as undiciErrors } from 'undici'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { boundOf, errorCodeOf } from '../../../src/config/errors.ts'
import {
  adapterErrorMessage,
  exchange,
  exchangeError,
  isRetryableStatus,
  statusKind,
  type HttpExchange,
} from '../../../src/pipeline/tasks/http-client.ts'
import { taskFailure as failure } from '../support/task.ts'

/**
 * The edges of one HTTP exchange (http-client.ts): what it answers, how each failure reads and
 * whether it is worth another try, which content types pass, where the byte cap lies, and that a
 * body it does not read is hung up on. A server on 127.0.0.1 plays the source.
 */
let server: Server
let base = ''
let closedUrl = ''
const seen: { method: string; url: string; headers: IncomingHttpHeaders; body: string }[] = []
// The connection of each request a test names (?id=...) closes: resolved when it does.
// Those tests give the exchange a signal that never ends it: only the exchange hangs up.
const never = new AbortController().signal
const closed = new Map<string, Promise<void>>()

beforeAll(async () => {
  server = createServer((request, response) => {
    const url = new URL(request.url ?? '/', 'http://x')
    const id = url.searchParams.get('id')
    if (id !== null)
      closed.set(id, new Promise((resolve) => request.socket.once('close', () => resolve())))
    const chunks: Buffer[] = []
    request.on('data', (chunk: Buffer) => chunks.push(chunk))
    request.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8')
      seen.push({
        method: request.method ?? '',
        url: request.url ?? '',
        headers: request.headers,
        body,
      })
      const endless = () => {
        const drip = () => response.write('x'.repeat(1024), () => setTimeout(drip, 5))
        drip()
      }
      const query = (name: string) => url.searchParams.get(name)
      switch (url.pathname) {
        case '/':
          response.writeHead(302, { location: '/' })
          return response.end()
        case '/typed': {
          const types = url.searchParams.getAll('type')
          if (types.length > 0)
            response.setHeader('content-type', types.length > 1 ? types : types[0]!)
          response.statusCode = Number(query('status') ?? 200)
          return response.end(query('body') ?? '{"ok":true}')
        }
        case '/sized':
          response.writeHead(200, { 'content-length': query('length')! })
          return response.end('a'.repeat(Number(query('length'))))
        case '/chunked':
          response.writeHead(200)
          response.write('a'.repeat(Number(query('length')) - 1))
          return response.end('a')
        case '/announced':
          // A part of the 5000 bytes, and the rest never: only the client can end it.
          response.writeHead(200, { 'content-length': '5000' })
          return response.write('a'.repeat(100))
        case '/binary':
          response.writeHead(200, { 'content-type': 'image/png' })
          return endless()
        case '/hop-endless':
          response.writeHead(302, { location: '/typed' })
          return endless()
        case '/cut':
          response.writeHead(200, { 'content-length': '100' })
          return response.write('a'.repeat(10), () => response.socket?.destroy())
        case '/latin1':
          response.writeHead(200, { 'content-type': 'text/plain' })
          return response.end(Buffer.from([0x63, 0x61, 0x66, 0xe9]))
        case '/to-closed':
          response.writeHead(302, { location: closedUrl })
          return response.end()
        case '/to-nowhere':
          response.writeHead(302, { location: `http://nowhere.test:${url.port || 1}/x?key=secret` })
          return response.end()
        case '/silent':
          return
      }
      response.writeHead(404)
      response.end()
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  const other = createServer()
  await new Promise<void>((resolve) => other.listen(0, '127.0.0.1', resolve))
  closedUrl = `http://127.0.0.1:${(other.address() as AddressInfo).port}/gone?key=secret`
  await new Promise((resolve) => other.close(resolve))
})
afterAll(async () => {
  server.closeAllConnections()
  await new Promise((resolve) => server.close(resolve))
})

const cap = { maxBytes: 1000, source: 'the test cap' }
const get = (path: string, more: Partial<HttpExchange> = {}) =>
  exchange({
    method: 'GET',
    url: `${base}${path}`,
    headers: {},
    signal: AbortSignal.timeout(10_000),
    cap,
    ...more,
  })

describe('what an exchange sends and answers', () => {
  it('sends its method, headers and body, and answers any status with its text', async () => {
    const before = seen.length
    const answer = await exchange({
      method: 'PUT',
      url: `${base}/typed?status=418&body=teapot`,
      body: '{"a":1}',
      headers: { 'x-api-key': 'k1', 'content-type': 'application/json' },
      signal: AbortSignal.timeout(10_000),
      cap,
    })
    expect(answer).toEqual({ status: 418, text: 'teapot' })
    expect(seen[before]).toMatchObject({
      method: 'PUT',
      body: '{"a":1}',
      headers: { 'x-api-key': 'k1', 'content-type': 'application/json' },
    })
  })
  it('a body of exactly the cap passes, announced or chunked', async () => {
    expect((await get('/sized?length=1000')).text).toHaveLength(1000)
    expect((await get('/chunked?length=1000')).text).toHaveLength(1000)
  })
  it('an unparseable URL fails as the task, named without its text', async () => {
    const error = await failure(get('', { url: 'not a url' }))
    expect(error.message).toMatch(/^GET \(invalid URL\) failed: /)
  })
})

describe('content types', () => {
  it('passes text, JSON, XML, forms, scripts and octet streams, and no type at all', async () => {
    for (const type of [
      'text/plain',
      'text/html; charset=utf-8',
      'application/json',
      'Application/JSON',
      'application/json ; charset=utf-8',
      'application/vnd.api+json',
      'application/xml',
      'application/atom+xml',
      'application/x-www-form-urlencoded',
      'application/javascript',
      'application/octet-stream',
      'binary/octet-stream',
      '; charset=utf-8',
    ])
      expect((await get(`/typed?type=${encodeURIComponent(type)}`)).text, type).toBe('{"ok":true}')
    expect((await get('/typed')).text).toBe('{"ok":true}')
  })
  it('refuses a media or archive type before reading it, in lower case, final', async () => {
    for (const type of [
      'image/png',
      'application/zip',
      'application/pdf',
      'application/jsonl',
      'application/xml-dtd',
      'x-text/plain',
      'application/javascript1',
      'application/x-octet-stream',
      'x-binary/octet-stream',
      'font/json+woff',
    ]) {
      const error = await failure(get(`/typed?type=${encodeURIComponent(type)}`))
      expect(error.message, type).toBe(
        `GET ${base}/typed answered content-type ${type}, not JSON or text`,
      )
      expect(error.kind).toBe('upstream')
      expect(error.retryable).toBe(false)
    }
    const upper = await failure(get('/typed?type=IMAGE/PNG%20;%20q=1'))
    expect(upper.message).toContain('answered content-type image/png, not JSON or text')
    const long = 'application/' + 'x'.repeat(200)
    const cut = await failure(get(`/typed?type=${long}`))
    expect(cut.message).toContain(`content-type ${long.slice(0, 80)}, not JSON or text`)
  })
  it('reads the first of two content types', async () => {
    const error = await failure(get('/typed?type=image/png&type=application/json'))
    expect(error.message).toContain('answered content-type image/png, not JSON or text')
    const text = await get('/typed?type=application/json&type=image/png')
    expect(text.text).toBe('{"ok":true}')
  })
})

describe('the byte cap', () => {
  it('a length announced over the cap is refused unread, naming the cap, final', async () => {
    const error = await failure(get('/announced?id=announced', { signal: never }))
    expect(error.message).toBe(
      `GET ${base}/announced announced 5000 bytes, over the cap of 1000 bytes (the test cap); the connection was closed`,
    )
    expect(error).toMatchObject({ kind: 'upstream', retryable: false })
    expect(boundOf(error)).toBe('the test cap')
    await closed.get('announced')
  })
  it('a body that goes on past the cap is stopped there', async () => {
    const error = await failure(get('/chunked?length=1001'))
    expect(error.message).toBe(
      `GET ${base}/chunked sent more than 1000 bytes, over the cap of 1000 bytes (the test cap); the connection was closed`,
    )
    expect(error).toMatchObject({ kind: 'upstream', retryable: false })
    expect(boundOf(error)).toBe('the test cap')
  })
  it('a refused content type hangs up on its body', async () => {
    await failure(get('/binary?id=binary', { signal: never }))
    await closed.get('binary')
  })
  it('a body that is not UTF-8 is the source at fault, final', async () => {
    const error = await failure(get('/latin1'))
    expect(error.message).toBe(`GET ${base}/latin1 answered a body that is not UTF-8 text`)
    expect(error).toMatchObject({ kind: 'upstream', retryable: false })
  })
})

describe('failures without an answer', () => {
  it('a body cut short is worth another try', async () => {
    const error = await failure(get('/cut'))
    expect(error.message).toBe(`GET ${base}/cut failed: UND_ERR_SOCKET`)
    expect(error).toMatchObject({ kind: 'unavailable', retryable: true })
  })
  it('a refused connection is unavailable, worth another try', async () => {
    const error = await failure(get('', { url: closedUrl }))
    expect(error.message).toBe(`GET ${closedUrl.replace('?key=secret', '')} failed: ECONNREFUSED`)
    expect(error).toMatchObject({ kind: 'unavailable', retryable: true })
  })
  it('a server that never answers ends at the signal: timed out, worth another try', async () => {
    const error = await failure(get('/silent', { signal: AbortSignal.timeout(200) }))
    expect(error.message).toBe(`GET ${base}/silent failed: timed out`)
    expect(error).toMatchObject({ kind: 'timeout', retryable: true })
  })
  it('a name that does not resolve is final', async () => {
    const resolve = async () => {
      throw new Error('no such name')
    }
    const error = await failure(get('', { url: 'http://nowhere.test/x', guard: { resolve } }))
    expect(error.message).toBe('url: cannot resolve nowhere.test')
    expect(error).toMatchObject({ kind: 'bad_input', retryable: false })
    expect(errorCodeOf(error)).toBe('ERR_UNRESOLVABLE_HOST')
  })
  it("the guard's refusal keeps its code", async () => {
    const error = await failure(get('/typed', { guard: {} }))
    expect(error.message).toContain('a URL from a variable may not reach it')
    expect(error).toMatchObject({ kind: 'bad_input', retryable: false })
    expect(errorCodeOf(error)).toBe('ERR_RESTRICTED_ADDRESS')
  })
})

describe('failures after a redirect', () => {
  it("names the hop that failed, without the URL's query", async () => {
    const error = await failure(get('/to-closed'))
    expect(error.message).toBe(
      `GET ${base}/to-closed redirected to ${closedUrl.replace('?key=secret', '')} and failed: ECONNREFUSED`,
    )
    expect(error).toMatchObject({ kind: 'unavailable', retryable: true })
  })
  it('a hop to a name that does not resolve is final', async () => {
    const resolve = async () => []
    const error = await failure(get('/to-nowhere', { guard: { hops: 'redirects', resolve } }))
    expect(error.message).toBe(
      `url: GET ${base}/to-nowhere redirected to http://nowhere.test:1/x: cannot resolve nowhere.test`,
    )
    expect(error).toMatchObject({ kind: 'bad_input', retryable: false })
  })
  it('a URL redirecting to itself is a loop at once, however it was written', async () => {
    const before = seen.length
    const error = await failure(get('', { url: base }))
    expect(error.message).toBe(`GET ${base}/ redirected in a loop: ${base}/ -> ${base}/`)
    expect(seen.length - before).toBe(1)
  })
  it("a redirect's body is not read: its connection is closed", async () => {
    expect((await get('/hop-endless?id=hop', { signal: never })).text).toBe('{"ok":true}')
    await closed.get('hop')
  })
})

describe('what an error status means', () => {
  it('5xx, 429 and 408 are worth another try; other statuses are not', () => {
    expect([500, 502, 503, 599, 429, 408].filter(isRetryableStatus)).toHaveLength(6)
    expect([499, 400, 404, 409, 428, 430, 407, 200].filter(isRetryableStatus)).toEqual([])
  })
  it('each status names its kind', () => {
    expect(
      [503, 504, 408, 401, 403, 400, 422, 500, 502, 404, 409].map((status) => statusKind(status)),
    ).toEqual([
      'unavailable',
      'timeout',
      'timeout',
      'not_authorised',
      'not_authorised',
      'bad_input',
      'bad_input',
      'upstream',
      'upstream',
      'upstream',
      'upstream',
    ])
  })
  it("finds an adapter's message where adapters put it, in that order", () => {
    expect(adapterErrorMessage('{"error":"down"}')).toBe('down')
    expect(adapterErrorMessage('{"error":{"message":"m1"},"errorMessage":"m2"}')).toBe('m1')
    expect(adapterErrorMessage('{"error":{"message":5},"errorMessage":"m2","message":"m3"}')).toBe(
      'm2',
    )
    expect(adapterErrorMessage('{"error":null,"errorMessage":7,"message":"m3"}')).toBe('m3')
    expect(adapterErrorMessage('{"message":4}')).toBeUndefined()
    expect(adapterErrorMessage('{}')).toBeUndefined()
    expect(adapterErrorMessage('null')).toBeUndefined()
    expect(adapterErrorMessage('not json')).toBeUndefined()
  })
})

// A failure with no HTTP answer is worth another try either way; its kind says whether the source
// was too slow (undici's connect, headers or body timeout) or not there at all.
describe('an exchange that ends without an answer', () => {
  it("is a timeout when undici's own timer ended it, and says which", () => {
    for (const timeout of [
      new undiciErrors.ConnectTimeoutError(),
      new undiciErrors.HeadersTimeoutError(),
      new undiciErrors.BodyTimeoutError(),
    ]) {
      const error = exchangeError('GET http://feed.test/x', timeout, never)
      expect(error).toMatchObject({ kind: 'timeout', retryable: true, cause: timeout })
      expect(error.message).toBe(`GET http://feed.test/x failed: ${timeout.code}`)
    }
  })

  it('is unavailable when the source was not there, and names the hop a redirect led to', () => {
    const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:9'), {
      code: 'ECONNREFUSED',
    })
    expect(exchangeError('GET http://feed.test/x', refused, never)).toMatchObject({
      kind: 'unavailable',
      retryable: true,
      message: 'GET http://feed.test/x failed: ECONNREFUSED',
    })
    const later = exchangeError('GET http://feed.test/x', refused, never, 'http://other.test/y')
    expect(later.message).toBe(
      'GET http://feed.test/x redirected to http://other.test/y and failed: ECONNREFUSED',
    )
  })
})
