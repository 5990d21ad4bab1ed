import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { RecordingChainAccess } from '../../../src/pipeline/index.ts'
import { ethtx } from '../../../src/pipeline/tasks/ethtx.ts'
import { isRestrictedAddress } from '../../../src/pipeline/tasks/http.ts'
import { exchange } from '../../../src/pipeline/tasks/http-client.ts'
import { sendJson, startTestServer, type TestServer } from '../support/http-server.ts'
import { runTask } from '../support/task.ts'

let server: TestServer
const cap = { maxBytes: 32 * 1024, source: 'HTTP_TASK_MAX_RESPONSE_BYTES' }
beforeAll(async () => {
  server = await startTestServer((request, response) => {
    if (request.url === '/adapter')
      return sendJson(response, 200, { result: '144', data: { result: '144' }, statusCode: 200 })
    if (request.url === '/bad-input')
      return sendJson(response, 400, {
        status: 'errored',
        statusCode: 400,
        error: { name: 'AdapterInputError', message: 'homeTeam: required' },
      })
    if (request.url === '/errored-200')
      return sendJson(response, 200, {
        status: 'errored',
        statusCode: 502,
        error: { name: 'x', message: 'upstream down' },
      })
    if (request.url === '/flaky') return sendJson(response, 503, { error: 'busy' })
    if (request.url === '/redirect') {
      response.writeHead(302, { location: '/adapter' })
      return response.end()
    }
    sendJson(response, 200, { method: request.method, body: request.body })
  })
})
afterAll(() => server.close())

describe('bridge', () => {
  it('POSTs requestData with meta to BRIDGE_<NAME>_URL and returns the body text', async () => {
    const vars = {
      jobSpec: { externalJobID: 'abc' },
      jobRun: { meta: { oracleRequest: { requestId: '0x01' } } },
      cbor: { homeTeam: 'Fulham', big: 10n ** 30n },
    }
    const before = server.requests.length
    const output = await runTask(
      'bridge',
      {
        name: 'datafeed',
        requestData:
          '{"id": $(jobSpec.externalJobID), "data": {"endpoint": "game-odds", "homeTeam": $(cbor.homeTeam), "big": $(cbor.big)}}',
      },
      { vars, context: { env: { BRIDGE_DATAFEED_URL: `${server.url}/adapter` } } },
    )
    expect(JSON.parse(output as string)).toEqual({
      result: '144',
      data: { result: '144' },
      statusCode: 200,
    })
    const sent = server.requests[before]!
    expect(sent.method).toBe('POST')
    // The bigint travels as a JSON number, digit for digit.
    expect(sent.body).toBe(
      '{"id":"abc","data":{"endpoint":"game-odds","homeTeam":"Fulham","big":1000000000000000000000000000000},"meta":{"oracleRequest":{"requestId":"0x01"}}}',
    )
  })
  it("sends the run's own meta, never a meta the requester put in the request's data", async () => {
    // A spec passing the request's data whole, with a `meta` of the requester's naming another request.
    const vars = {
      jobRun: { meta: { oracleRequest: { requestId: '0x01' } } },
      cbor: { endpoint: 'game-odds', meta: { oracleRequest: { requestId: '0x99' } } },
    }
    const before = server.requests.length
    await runTask(
      'bridge',
      { name: 'datafeed', requestData: '{"data": $(cbor), "meta": $(cbor.meta)}' },
      { vars, context: { env: { BRIDGE_DATAFEED_URL: `${server.url}/adapter` } } },
    )
    expect(JSON.parse(server.requests[before]!.body).meta).toEqual({
      oracleRequest: { requestId: '0x01' },
    })
  })
  it('fails with the adapter message on an error status, in the header or the body', async () => {
    await expect(
      runTask(
        'bridge',
        { name: 'datafeed' },
        { context: { env: { BRIDGE_DATAFEED_URL: `${server.url}/bad-input` } } },
      ),
    ).rejects.toThrow('answered 400: homeTeam: required')
    await expect(
      runTask(
        'bridge',
        { name: 'datafeed' },
        { context: { env: { BRIDGE_DATAFEED_URL: `${server.url}/errored-200` } } },
      ),
    ).rejects.toThrow('answered 502: upstream down')
  })
  it('says which variable is missing for an unconfigured bridge', async () => {
    await expect(
      runTask('bridge', { name: 'other-feed' }, { context: { env: {} } }),
    ).rejects.toThrow('BRIDGE_OTHER_FEED_URL is not set')
  })
})

describe('http', () => {
  it('GETs a literal loopback URL (written by the operator)', async () => {
    expect(
      JSON.parse((await runTask('http', { method: 'GET', url: `${server.url}/x` })) as string),
    ).toEqual({ method: 'GET', body: '' })
  })
  it('POSTs requestData as JSON', async () => {
    const output = await runTask(
      'http',
      { method: 'POST', url: `${server.url}/x`, requestData: '{"n": $(n)}' },
      { vars: { n: 5n } },
    )
    expect(JSON.parse(output as string)).toEqual({ method: 'POST', body: '{"n":5}' })
  })
  it('refuses a URL from a variable that reaches loopback, unless allowed', async () => {
    const vars = { req: { url: `${server.url}/x` } }
    await expect(runTask('http', { method: 'GET', url: '$(req.url)' }, { vars })).rejects.toThrow(
      '127.0.0.1 is a special-purpose address (127.0.0.0/8 Loopback, RFC 1122)',
    )
    await expect(
      runTask(
        'http',
        { method: 'GET', url: '$(req.url)' },
        { vars: { req: { url: 'http://localhost:1/x' } } },
      ),
    ).rejects.toThrow('a special-purpose address')
    await expect(
      runTask(
        'http',
        { method: 'GET', url: '$(req.url)' },
        { vars: { req: { url: 'http://[::1]:1/x' } } },
      ),
    ).rejects.toThrow('a special-purpose address')
    const allowed = await runTask(
      'http',
      { method: 'GET', url: '$(req.url)', allowUnrestrictedNetworkAccess: 'true' },
      { vars },
    )
    expect(JSON.parse(allowed as string)).toEqual({ method: 'GET', body: '' })
  })
  it('classifies addresses', () => {
    for (const address of [
      '127.0.0.1',
      '10.1.2.3',
      '172.16.0.1',
      '192.168.1.1',
      '169.254.169.254',
      '0.0.0.0',
      '::1',
      'fd00::1',
      'fe80::1',
      '::ffff:127.0.0.1',
    ])
      expect(isRestrictedAddress(address)).toBe(true)
    for (const address of ['8.8.8.8', '1.1.1.1', '2606:4700::1111'])
      expect(isRestrictedAddress(address)).toBe(false)
  })
  it('fails on a non-2xx answer and marks 5xx retryable', async () => {
    await expect(
      runTask('http', { method: 'GET', url: `${server.url}/flaky` }),
    ).rejects.toMatchObject({
      retryable: true,
      message: expect.stringContaining('answered 503: busy'),
    })
    await expect(runTask('http', { method: 'GET', url: 'ftp://example.com/' })).rejects.toThrow(
      'must be http or https',
    )
  })
})

describe('the HTTP exchange', () => {
  it('follows a redirect for a URL the operator wrote; a guarded exchange checks the hop', async () => {
    const request = {
      method: 'GET',
      url: `${server.url}/redirect`,
      headers: {},
      signal: AbortSignal.timeout(5_000),
      cap,
    } as const
    expect(JSON.parse((await exchange(request)).text)).toMatchObject({ result: '144' })
    await expect(exchange({ ...request, guard: {} })).rejects.toThrow(
      '127.0.0.1 is a special-purpose address (127.0.0.0/8 Loopback, RFC 1122)',
    )
  })
  it('names the connection error and marks it retryable', async () => {
    const closed = await startTestServer(() => undefined)
    const url = `${closed.url}/adapter`
    await closed.close()
    await expect(
      exchange({
        method: 'POST',
        url,
        body: '{}',
        headers: {},
        signal: AbortSignal.timeout(5_000),
        cap,
      }),
    ).rejects.toMatchObject({
      retryable: true,
      message: expect.stringContaining('failed: ECONNREFUSED'),
    })
  })
  it('says timed out when its signal ends the exchange', async () => {
    const silent = await startTestServer(() => undefined)
    try {
      await expect(
        exchange({
          method: 'GET',
          url: `${silent.url}/slow`,
          headers: {},
          signal: AbortSignal.timeout(200),
          cap,
        }),
      ).rejects.toMatchObject({
        retryable: true,
        message: expect.stringContaining('failed: timed out'),
      })
    } finally {
      await silent.close()
    }
  })
})

describe('ethtx and ethcall', () => {
  it('ethtx hands the transaction to the injected ChainAccess', async () => {
    const chain = new RecordingChainAccess()
    const outcome = await runTask(
      'ethtx',
      {
        to: '0xe7f1725e7734ce288f8367e1bb143e90bb3f0512',
        gasLimit: '500000',
        minConfirmations: '2',
      },
      { inputs: ['0x1234'], context: { chain, runId: 'run-1' } },
    )
    expect(outcome).toEqual({ status: 'recorded' })
    expect(chain.transactions).toEqual([
      {
        to: '0xe7f1725E7734CE288F8367e1Bb143E90bb3F0512',
        data: '0x1234',
        gasLimit: 500000n,
        minConfirmations: 2,
        failOnRevert: false,
        idempotencyKey: 'run-1:task',
        // The task's own signal: the sender stops waiting, and a wait for minConfirmations ends,
        // when the task times out or the run stops.
        signal: expect.any(AbortSignal),
      },
    ])
  })
  it('ethtx uses the spec gasLimit when the task gives none, and refuses bad input', async () => {
    const chain = new RecordingChainAccess()
    await runTask(
      'ethtx',
      { to: '0xe7f1725e7734ce288f8367e1bb143e90bb3f0512', data: '0x' },
      { context: { chain, defaultGasLimit: 400000n } },
    )
    expect(chain.transactions[0]!.gasLimit).toBe(400000n)
    await expect(
      runTask('ethtx', { to: 'nobody', data: '0x' }, { context: { chain } }),
    ).rejects.toThrow('to must be an address')
    await expect(
      runTask(
        'ethtx',
        { to: '0xe7f1725e7734ce288f8367e1bb143e90bb3f0512', data: 'hello' },
        { context: { chain } },
      ),
    ).rejects.toThrow('data must be 0x-hex')
    await expect(
      runTask('ethtx', { to: '0xe7f1725e7734ce288f8367e1bb143e90bb3f0512', data: '0x' }),
    ).rejects.toThrow('no chain access')
  })
  it('ethtx asks for a simulation when its transmitChecker says simulate, as on a Chainlink node, and refuses other checkers', async () => {
    const chain = new RecordingChainAccess()
    const to = '0xe7f1725e7734ce288f8367e1bb143e90bb3f0512'
    await runTask(
      'ethtx',
      { to, data: '0x', transmitChecker: '{"CheckerType": "simulate"}' },
      { context: { chain } },
    )
    await runTask('ethtx', { to, data: '0x' }, { context: { chain } })
    expect(chain.transactions.map((tx) => tx.simulate)).toEqual([true, undefined])
    await expect(
      runTask(
        'ethtx',
        { to, data: '0x', transmitChecker: '{"CheckerType": "vrf_v2"}' },
        { context: { chain } },
      ),
    ).rejects.toThrow('CheckerType "vrf_v2" is not supported')
    expect(ethtx.check?.({ to, transmitChecker: '{"CheckerType": "vrf_v2"}' })).toEqual([
      {
        attribute: 'transmitChecker',
        message: 'CheckerType "vrf_v2" is not supported (only "simulate")',
      },
    ])
    expect(ethtx.check?.({ to, transmitChecker: '{"CheckerType": "simulate"}' })).toEqual([])
  })
  it('ethcall returns what the chain answers', async () => {
    const chain = new RecordingChainAccess(async (tx) =>
      tx.data === '0xabcd' ? '0x' + '00'.repeat(31) + '2a' : '0x',
    )
    expect(
      await runTask(
        'ethcall',
        { contract: '0xe7f1725e7734ce288f8367e1bb143e90bb3f0512', data: '0xabcd' },
        { context: { chain } },
      ),
    ).toBe('0x' + '00'.repeat(31) + '2a')
    expect(chain.calls[0]).toMatchObject({
      to: '0xe7f1725E7734CE288F8367e1Bb143E90bb3F0512',
      blockNumber: 'latest',
    })
  })
})
