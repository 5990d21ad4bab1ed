import { createServer, type IncomingHttpHeaders } from 'node:http'
import type { AddressInfo } from 'node:net'
import { hexlify, toUtf8Bytes } from 'ethers'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { RecordingChainAccess } from '../../../src/pipeline/index.ts'
import { sendJson, startTestServer, type TestServer } from '../support/http-server.ts'
import { callException, runTask } from '../support/task.ts'

// Chainlink's http, bridge and ethcall cases (task.http_test.go, task.bridge_test.go,
// task.ethcall_test.go) that do not need a node's database: requestData from variables, the private-address guard, an adapter's error
// message, headers. Where feedrunner classifies a failure differently, the case says so.

let server: TestServer
let lastBody: unknown
beforeAll(async () => {
  server = await startTestServer((request, response) => {
    lastBody = request.body === '' ? undefined : JSON.parse(request.body)
    if (request.url === '/too-many')
      return sendJson(response, 429, { error: { message: 'could not hit data fetcher' } })
    if (request.url === '/bad-gateway')
      return sendJson(response, 502, { error: 'RequestId: 1, the provider is down' })
    sendJson(response, 200, { data: { result: 9700 } })
  })
})
afterAll(() => server.close())

async function failure(
  promise: Promise<unknown>,
): Promise<{ message: string; retryable: boolean }> {
  try {
    await promise
  } catch (error) {
    return error as { message: string; retryable: boolean }
  }
  throw new Error('expected the task to fail')
}

describe('bridge requestData (TestBridgeTask_Variables)', () => {
  const bridge = (requestData: string, vars: Record<string, unknown>) =>
    runTask(
      'bridge',
      { name: 'prices', ...(requestData ? { requestData } : {}) },
      {
        vars: { ...vars, jobRun: { meta: { theMeta: 'yes' } } },
        context: { env: { BRIDGE_PRICES_URL: server.url } },
      },
    )
  it.each<[string, string, Record<string, unknown>, unknown]>([
    [
      'requestData (empty) + meta',
      '',
      { some_data: { foo: 543.21 } },
      { meta: { theMeta: 'yes' } },
    ],
    [
      'requestData (pure variable) + meta',
      '$(some_data)',
      { some_data: { foo: 543.21 } },
      { foo: 543.21, meta: { theMeta: 'yes' } },
    ],
    [
      'requestData (interpolation) + meta',
      '{"data":{"result":$(medianize)}}',
      { medianize: 543.21 },
      { data: { result: 543.21 }, meta: { theMeta: 'yes' } },
    ],
  ])('%s', async (_name, requestData, vars, sent) => {
    expect(JSON.parse((await bridge(requestData, vars)) as string)).toEqual({
      data: { result: 9700 },
    })
    expect(lastBody).toEqual(sent)
  })
  it.each<[string, string, Record<string, unknown>]>([
    ['requestData (pure variable, missing)', '$(some_data)', { not_some_data: { foo: 543.21 } }],
    ['requestData (pure variable, not a map)', '$(some_data)', { some_data: 543.21 }],
    [
      'requestData (interpolation, missing)',
      '{"data":{"result":$(medianize)}}',
      { nope: 'foo bar' },
    ],
  ])('%s', async (_name, requestData, vars) => {
    const error = await failure(bridge(requestData, vars))
    expect(error.message).toContain('requestData')
    expect(error.retryable).toBe(false)
  })
})

describe('http (TestHTTPTask_*)', () => {
  it('a literal URL may be loopback; one from a variable only with allowUnrestrictedNetworkAccess (OverrideURLSafe)', async () => {
    expect(
      await runTask('http', { method: 'POST', url: server.url, requestData: '{"a": 1}' }),
    ).toBe('{"data":{"result":9700}}')
    const guarded = await failure(
      runTask('http', { method: 'POST', url: '$(url)' }, { vars: { url: server.url } }),
    )
    expect(guarded.message).toContain('a special-purpose address (127.0.0.0/8 Loopback')
    // Differs: a node marks this refusal retryable; it answers the same on every try, so it is final here.
    expect(guarded.retryable).toBe(false)
    expect(
      await runTask(
        'http',
        { method: 'POST', url: '$(url)', allowUnrestrictedNetworkAccess: 'true' },
        { vars: { url: server.url } },
      ),
    ).toBe('{"data":{"result":9700}}')
  })
  it("an error status carries the adapter's message (ErrorMessage, OnlyErrorMessage)", async () => {
    const tooMany = await failure(
      runTask('http', { method: 'POST', url: `${server.url}/too-many` }),
    )
    expect(tooMany.message).toContain('could not hit data fetcher')
    // Differs: 429 is retryable here (a node retries 5xx only).
    expect(tooMany.retryable).toBe(true)
    const badGateway = await failure(
      runTask('http', { method: 'POST', url: `${server.url}/bad-gateway` }),
    )
    expect(badGateway.message).toContain('RequestId')
    expect(badGateway.retryable).toBe(true)
  })
  it('sends headers, lets them override content-type, and refuses an odd number (Headers)', async () => {
    let headers: IncomingHttpHeaders = {}
    const echo = createServer((request, response) => {
      headers = request.headers
      request.resume()
      request.on('end', () => response.end('{"fooresponse": 3}'))
    })
    await new Promise<void>((resolve) => echo.listen(0, '127.0.0.1', resolve))
    try {
      const url = `http://127.0.0.1:${(echo.address() as AddressInfo).port}`
      const answer = await runTask('http', {
        method: 'POST',
        url,
        requestData: '{"a": 1}',
        headers: '["X-Header-1", "foo", "Content-Type", "footype", "X-Header-2", "bar"]',
      })
      expect(answer).toBe('{"fooresponse": 3}')
      expect(headers).toMatchObject({
        'x-header-1': 'foo',
        'x-header-2': 'bar',
        'content-type': 'footype',
      })
    } finally {
      echo.closeAllConnections()
      await new Promise((resolve) => echo.close(resolve))
    }
    const odd = await failure(
      runTask('http', {
        method: 'POST',
        url: server.url,
        headers: '["X-Header-1", "foo", "X-Header-2", "bar", "odd one out"]',
      }),
    )
    expect(odd.message).toContain('headers must be a list of name, value pairs')
  })
})

describe('ethcall (TestETHCallTask)', () => {
  const contract = '0xDeaDbeefdEAdbeefdEadbEEFdeadbeEFdEaDbeeF'
  it('happy with empty from: bytes data, the job gas limit (else 500,000), the latest block', async () => {
    const chain = new RecordingChainAccess(async () => '0x62617a2071757578')
    const result = await runTask(
      'ethcall',
      { contract, data: '$(foo)' },
      { vars: { foo: toUtf8Bytes('foo bar') }, context: { chain } },
    )
    expect(result).toBe('0x62617a2071757578')
    expect(chain.calls).toEqual([
      expect.objectContaining({
        to: contract,
        data: hexlify(toUtf8Bytes('foo bar')),
        gasLimit: 500_000n,
        blockNumber: 'latest',
        from: undefined,
      }),
    ])
    await runTask(
      'ethcall',
      { contract, data: '0x12', gas: '123' },
      { context: { chain, defaultGasLimit: 789n } },
    )
    await runTask(
      'ethcall',
      { contract, data: '0x12' },
      { context: { chain, defaultGasLimit: 789n } },
    )
    expect(chain.calls.slice(1).map((call) => call.gasLimit)).toEqual([123n, 789n])
  })
  it('bad contract address, and a node that does not answer (retryable) or a revert (final)', async () => {
    expect(
      (
        await failure(
          runTask(
            'ethcall',
            { contract: '0xDeaDbeef', data: '0x12' },
            { context: { chain: new RecordingChainAccess() } },
          ),
        )
      ).message,
    ).toContain('contract must be an address')
    const away = new RecordingChainAccess(async () => {
      throw Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' })
    })
    expect(
      (await failure(runTask('ethcall', { contract, data: '0x12' }, { context: { chain: away } })))
        .retryable,
    ).toBe(true)
    const reverts = new RecordingChainAccess(async () => {
      throw callException(contract, 'nope')
    })
    expect(
      await failure(
        runTask('ethcall', { contract, data: '0x12' }, { context: { chain: reverts } }),
      ),
    ).toMatchObject({ retryable: false, kind: 'reverted' })
  })
})
