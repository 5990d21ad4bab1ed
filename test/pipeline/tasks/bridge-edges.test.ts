import { createServer, type IncomingHttpHeaders, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { FeedrunnerError } from '../../../src/config/errors.ts'
import type { Reachability } from '../../../src/pipeline/task.ts'
import { bridge, headerPairs, withHeaders } from '../../../src/pipeline/tasks/bridge.ts'
import { runTask, taskFailure as failure } from '../support/task.ts'

/**
 * The edges of the bridge task (bridge.ts): the names and attributes a spec may write, the body and
 * headers it POSTs, what an adapter's answer means (its HTTP status and the statusCode in its body),
 * and what it tells the runner about whether the adapter was reached.
 */
let server: Server
let base = ''
let last: { headers: IncomingHttpHeaders; body: unknown } = { headers: {}, body: undefined }

beforeAll(async () => {
  server = createServer((request, response) => {
    const chunks: Buffer[] = []
    request.on('data', (chunk: Buffer) => chunks.push(chunk))
    request.on('end', () => {
      last = { headers: request.headers, body: JSON.parse(Buffer.concat(chunks).toString()) }
      const url = new URL(request.url ?? '/', 'http://x')
      if (url.pathname === '/silent') return
      response.statusCode = Number(url.searchParams.get('status') ?? 200)
      response.end(url.searchParams.get('body') ?? '{"data":{"result":7},"statusCode":200}')
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
})
afterAll(async () => {
  server.closeAllConnections()
  await new Promise((resolve) => server.close(resolve))
})

const answering = (status: number, body: unknown) =>
  `${base}/?status=${status}&body=${encodeURIComponent(typeof body === 'string' ? body : JSON.stringify(body))}`

function call(
  url: string,
  attributes: Record<string, string> = {},
  options: Parameters<typeof runTask>[2] = {},
  signal?: AbortSignal,
) {
  return runTask(
    'bridge',
    { name: 'feed', ...attributes },
    { ...options, context: { env: { BRIDGE_FEED_URL: url }, ...options.context } },
    signal,
  )
}

describe('what a spec may write', () => {
  const check = (attributes: Record<string, string>) => bridge.check?.(attributes)

  it('names of letters, digits, _ and -, a variable, or none yet', () => {
    for (const name of ['AZaz09_-', 'datafeed', ' datafeed ', '$(req.bridge)', ''])
      expect(check({ name }), name).toEqual([])
    expect(check({})).toEqual([])
  })
  it('refuses any other name, quoted and cut at 60 characters', () => {
    for (const name of ['bad name', 'feed!', 'feed.io', 'é'])
      expect(check({ name }), name).toEqual([
        {
          attribute: 'name',
          message: `must be a bridge name such as "datafeed" (letters, digits, _ and -), got ${JSON.stringify(name)}`,
        },
      ])
    expect(check({ name: `${'a'.repeat(70)} b` })?.[0]?.message).toContain(
      `got "${'a'.repeat(60)}"`,
    )
  })
  it('refuses async="true" and any cacheTTL, saying what to do instead', () => {
    const async = {
      attribute: 'async',
      message:
        'asynchronous bridges are not supported: feedrunner has no callback URL for an adapter to answer later; make the adapter answer at once, or remove async',
    }
    const cacheTTL = {
      attribute: 'cacheTTL',
      message:
        'is not supported: feedrunner keeps no cache of bridge answers to serve when the bridge fails (the adapter caches its own); remove cacheTTL',
    }
    expect(check({ name: 'feed', async: 'true' })).toEqual([async])
    expect(check({ name: 'feed', async: ' true ' })).toEqual([async])
    expect(check({ name: 'feed', async: 'false' })).toEqual([])
    expect(check({ name: 'feed', cacheTTL: '10s' })).toEqual([cacheTTL])
    expect(
      check({ name: 'bad name', async: 'true', cacheTTL: '1m' })?.map((p) => p.attribute),
    ).toEqual(['name', 'async', 'cacheTTL'])
  })
})

describe('the name and URL at run time', () => {
  it('trims a name from a variable', async () => {
    const text = await runTask(
      'bridge',
      { name: '$(req.bridge)' },
      { vars: { req: { bridge: ' feed ' } }, context: { env: { BRIDGE_FEED_URL: base } } },
    )
    expect(JSON.parse(text as string)).toEqual({ data: { result: 7 }, statusCode: 200 })
  })
  it('refuses a missing or malformed name, quoted', async () => {
    const none = await failure(runTask('bridge', {}, { context: { env: {} } }))
    expect(none.message).toBe('name must be a bridge name such as "datafeed", got ""')
    const bad = await failure(
      runTask('bridge', { name: '$(req.bridge)' }, { vars: { req: { bridge: 'a/b' } } }),
    )
    expect(bad.message).toBe('name must be a bridge name such as "datafeed", got "a/b"')
    expect(bad).toMatchObject({ kind: 'bad_input', retryable: false })
  })
  it('names the setting of a bridge with no URL: a configuration mistake, final', async () => {
    const error = await failure(
      runTask('bridge', { name: 'Price-feed_2' }, { context: { env: {} } }),
    )
    expect(error.message).toBe('bridge Price-feed_2: BRIDGE_PRICE_FEED_2_URL is not set')
    expect(error).toMatchObject({ kind: 'config', retryable: false })
  })
})

describe('what it POSTs', () => {
  it('requestData alone when there is no run meta nor input key', async () => {
    await call(base, { requestData: '{"a":1}' }, { vars: { jobRun: { meta: 'not an object' } } })
    expect(last.body).toStrictEqual({ a: 1 })
    await call(base, {}, { vars: { jobRun: 'no meta' } })
    expect(last.body).toStrictEqual({})
    await call(base, {}, { vars: { jobRun: null }, inputs: [42] })
    expect(last.body).toStrictEqual({})
  })
  it('the first input under includeInputAtKey', async () => {
    await call(base, { requestData: '{"a":1}', includeInputAtKey: 'input' }, { inputs: [42, 43] })
    expect(last.body).toStrictEqual({ a: 1, input: 42 })
  })
  it('refuses requestData that is not an object', async () => {
    const error = await failure(call(base, { requestData: '[1, 2]' }))
    expect(error.message).toBe('requestData must be a JSON object')
  })
  it('JSON by default; the spec headers are sent, and replace the content type whatever its case', async () => {
    await call(base)
    expect(last.headers['content-type']).toBe('application/json')
    await call(base, { headers: '["CONTENT-TYPE", "text/plain", "X-Key", "k1"]' })
    expect(last.headers).toMatchObject({ 'content-type': 'text/plain', 'x-key': 'k1' })
  })
  it('headers merge over defaults by name without case, in a flat list of pairs', () => {
    expect(
      withHeaders({ 'Content-Type': 'application/json', accept: '*/*' }, { 'content-type': 'x' }),
    ).toStrictEqual({ accept: '*/*', 'content-type': 'x' })
    expect(headerPairs(['A', '1', 'B', '2'])).toStrictEqual({ A: '1', B: '2' })
    expect(headerPairs(undefined)).toStrictEqual({})
    expect(headerPairs([])).toStrictEqual({})
    for (const bad of ['A: 1', ['A'], ['A', 1], { A: '1' }, ['A', '1', 'B']])
      expect(() => headerPairs(bad)).toThrow(
        'headers must be a list of name, value pairs such as ["X-Key", "value"]',
      )
  })
})

describe("what the adapter's answer means", () => {
  it('only 200 is an answer: another 2xx fails with the body as the reason', async () => {
    const error = await failure(call(answering(201, 'created')))
    expect(error.message).toBe(`bridge feed (${base}/) answered 201: created`)
    expect(error).toMatchObject({ kind: 'upstream', retryable: false })
  })
  it('a statusCode in the body overrides a 200; a statusCode that is not a number is not one', async () => {
    const error = await failure(
      call(answering(200, { statusCode: 503, error: { message: 'redis gone' } })),
    )
    expect(error.message).toBe(`bridge feed (${base}/) answered 503: redis gone`)
    expect(error).toMatchObject({ kind: 'unavailable', retryable: true })
    expect(await call(answering(200, { statusCode: '500', data: 1 }))).toBe(
      '{"statusCode":"500","data":1}',
    )
    expect(await call(answering(200, ['statusCode', 500]))).toBe('["statusCode",500]')
  })
  it('a body saying 200 under an error status is no answer: the HTTP status says what failed', async () => {
    const error = await failure(call(answering(503, { statusCode: 200, data: { result: 1 } })))
    expect(error.message).toContain(`bridge feed (${base}/) answered 503:`)
    expect(error).toMatchObject({ kind: 'unavailable', retryable: true })
  })
  it('a 502 is final: the feed service failed after its own retries', async () => {
    const error = await failure(call(answering(502, { error: 'provider down' })))
    expect(error.message).toBe(`bridge feed (${base}/) answered 502: provider down`)
    expect(error).toMatchObject({ kind: 'upstream', retryable: false })
    expect(error.cause).toBeInstanceOf(FeedrunnerError)
    expect(error.cause).toMatchObject({
      message: 'provider down',
      kind: 'upstream',
      retryable: false,
    })
  })
  it('5xx and 429 are worth another try, a refusal is not; the reason is cut at 200 characters', async () => {
    const busy = await failure(call(answering(500, 'x'.repeat(300))))
    expect(busy.message).toBe(`bridge feed (${base}/) answered 500: ${'x'.repeat(200)}`)
    expect(busy).toMatchObject({ kind: 'upstream', retryable: true })
    expect(busy.cause).toMatchObject({ message: 'x'.repeat(200), retryable: true })
    const tooMany = await failure(call(answering(429, { message: 'slow down' })))
    expect(tooMany).toMatchObject({ kind: 'upstream', retryable: true })
    const refused = await failure(call(answering(401, { errorMessage: 'bad key' })))
    expect(refused.message).toContain('answered 401: bad key')
    expect(refused).toMatchObject({ kind: 'not_authorised', retryable: false })
  })
  it("keeps the URL's query, where a key may be, out of the message", async () => {
    const error = await failure(call(`${answering(400, { error: 'no' })}&key=secret`))
    expect(error.message).toBe(`bridge feed (${base}/) answered 400: no`)
  })
})

describe('what it tells the runner about reaching the adapter', () => {
  function recorder() {
    const events: string[] = []
    const bridgeReach = (name: string, url: string): Reachability => {
      events.push(`reach ${name} ${url}`)
      return {
        answered: () => events.push('answered'),
        failed: (error) => events.push(`failed ${(error as Error).message}`),
      }
    }
    return { events, bridgeReach }
  }

  it('answered, for any answer, an error status included', async () => {
    const { events, bridgeReach } = recorder()
    await call(base, {}, { context: { bridgeReach } })
    await failure(call(answering(500, 'down'), {}, { context: { bridgeReach } }))
    expect(events).toEqual([
      `reach feed ${base}`,
      'answered',
      `reach feed ${answering(500, 'down')}`,
      'answered',
    ])
  })
  it('failed, when nothing answers the connection; neither, when the answer is late', async () => {
    const other = createServer()
    await new Promise<void>((resolve) => other.listen(0, '127.0.0.1', resolve))
    const gone = `http://127.0.0.1:${(other.address() as AddressInfo).port}/`
    await new Promise((resolve) => other.close(resolve))
    const { events, bridgeReach } = recorder()
    const refused = await failure(call(gone, {}, { context: { bridgeReach } }))
    expect(refused).toMatchObject({ kind: 'unavailable', retryable: true })
    expect(events).toEqual([`reach feed ${gone}`, `failed POST ${gone} failed: ECONNREFUSED`])
    // Without a runner to tell, the failure is the same.
    expect(await failure(call(gone))).toMatchObject({ kind: 'unavailable', retryable: true })
    events.length = 0
    const late = await failure(
      call(`${base}/silent`, {}, { context: { bridgeReach } }, AbortSignal.timeout(200)),
    )
    expect(late.kind).toBe('timeout')
    expect(events).toEqual([`reach feed ${base}/silent`])
  })
})
