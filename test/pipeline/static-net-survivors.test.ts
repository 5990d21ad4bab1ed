import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { loadJobSpec, runJob, TaskIsolation, type Job } from '../../src/pipeline/index.ts'
import { redirectTarget, type Hop } from '../../src/pipeline/tasks/redirects.ts'
import {
  sendJson,
  startTestServer,
  type RecordedRequest,
  type TestServer,
} from './support/http-server.ts'

// What the network tasks' definitions (http, bridge) and their neighbours (cborparse, jsonparse,
// the refused task types, the redirect rules) declare, seen where a spec author, an operator or a
// source sees it: the attributes a spec may write, the values refused when it is loaded, the
// loader's reasons, where a network task runs, and what a redirect carries on. Static mutants of
// these tables survived every test that only ran the tasks' code.

/** Loads a cron spec around `pipeline` (a ''' block: DOT's own escapes pass through as written). */
function load(pipeline: string): ReturnType<typeof loadJobSpec> {
  return loadJobSpec(
    `type = "cron"
schemaVersion = 1
name = "net"
schedule = "@every 1m"
observationSource = '''${pipeline}'''
`,
    'jobs/net.toml',
  )
}

const messagesOf = (pipeline: string): string[] =>
  load(pipeline).problems.map((problem) => problem.message)

function taken(pipeline: string): Job {
  const { job, problems } = load(pipeline)
  expect(problems).toEqual([])
  return job!
}

/** A server on 127.0.0.1 that answers `{"data":{"result":42}}` and records what it was sent. */
let server: TestServer
let base = ''
beforeAll(async () => {
  server = await startTestServer((_request, response) =>
    sendJson(response, 200, { data: { result: 42 } }),
  )
  base = server.url
})
afterAll(() => server.close())

const lastSeen = (): RecordedRequest => server.requests[server.requests.length - 1]!

describe('the attributes a spec author writes on the network tasks are taken, and do what they say', () => {
  it('takes http headers and maxResponseBytes, and sends the headers', async () => {
    const job = taken(`
  fetch [type="http" method=POST url="${base}/prices" requestData="{\\"coin\\": \\"ETH\\"}"
         headers="[\\"X-Api-Key\\", \\"k1\\"]" allowUnrestrictedNetworkAccess="true"
         maxResponseBytes="1000"]
`)
    const result = await runJob(job)
    expect(result.errors).toEqual([])
    expect(result.outputs).toEqual(['{"data":{"result":42}}'])
    expect(lastSeen()).toMatchObject({
      method: 'POST',
      url: '/prices',
      body: '{"coin":"ETH"}',
      headers: { 'x-api-key': 'k1' },
    })
  })

  it('takes bridge headers, includeInputAtKey and maxResponseBytes, and sends the input where asked', async () => {
    const job = taken(`
  price  [type="memo" value="7"]
  fetch  [type="bridge" name="feed" requestData="{\\"coin\\": \\"ETH\\"}" includeInputAtKey="previous"
          headers="[\\"X-Api-Key\\", \\"k2\\"]" maxResponseBytes="1000"]
  result [type="jsonparse" data="$(fetch)" path="data/result" separator="/"]
  price -> fetch -> result
`)
    const result = await runJob(job, { env: { BRIDGE_FEED_URL: `${base}/bridge` } })
    expect(result.errors).toEqual([])
    expect(result.outputs.map(String)).toEqual(['42'])
    expect(lastSeen()).toMatchObject({
      method: 'POST',
      url: '/bridge',
      headers: { 'x-api-key': 'k2' },
    })
    expect(JSON.parse(lastSeen().body)).toEqual({ coin: 'ETH', previous: '7' })
  })

  it('takes cborparse data and mode written in the spec, and decodes the data as the mode says', async () => {
    // {"path": "a"}: as a diet map body (the text "path", then the text "a"), and as one whole map.
    const job = taken(`
  diet     [type="cborparse" data="0x64706174686161"]
  standard [type="cborparse" data="0xa164706174686161" mode="standard"]
`)
    const result = await runJob(job)
    expect(result.errors).toEqual([])
    expect(result.outputs).toEqual([{ path: 'a' }, { path: 'a' }])
  })
})

describe('values a spec writes that a run would refuse are refused when it is loaded', () => {
  it('refuses http requestData and headers that are not JSON, naming the attribute', () => {
    expect(
      messagesOf(`
  fetch [type="http" url="${base}/x" requestData="{\\"coin\\": " headers="[\\"X-Key\\""]
`),
    ).toEqual([
      expect.stringMatching(/^requestData is not valid JSON: /),
      expect.stringMatching(/^headers is not valid JSON: /),
    ])
  })

  it('refuses bridge headers that are not JSON, naming the attribute', () => {
    expect(
      messagesOf(`
  fetch [type="bridge" name="feed" headers="[\\"X-Key\\""]
`),
    ).toEqual([expect.stringMatching(/^headers is not valid JSON: /)])
  })

  it('refuses a switch that is neither true nor false: http allowUnrestrictedNetworkAccess, bridge async', () => {
    expect(
      messagesOf(`
  fetch [type="http" url="${base}/x" allowUnrestrictedNetworkAccess="maybe"]
  call  [type="bridge" name="feed" async="later"]
`),
    ).toEqual([
      'allowUnrestrictedNetworkAccess must be true or false, got "maybe"',
      'async must be true or false, got "later"',
    ])
  })

  it('refuses an http task without a url', () => {
    expect(messagesOf('\n  fetch [type="http" method=GET]\n')).toEqual([
      'http needs the attribute url',
    ])
  })

  it('tells a bridge cacheTTL only to go: any value is refused, so its spelling is not the problem', () => {
    expect(messagesOf('\n  call [type="bridge" name="feed" cacheTTL="1 hour"]\n')).toEqual([
      'cacheTTL: is not supported: feedrunner keeps no cache of bridge answers to serve when the bridge fails (the adapter caches its own); remove cacheTTL',
    ])
  })
})

describe('an http task without a method is a GET, as on a node', () => {
  it('takes the spec and fetches with GET, as it does for an empty method', async () => {
    const job = taken(`
  plain [type="http" url="${base}/plain" allowUnrestrictedNetworkAccess="true"]
  empty [type="http" method="" url="${base}/empty" allowUnrestrictedNetworkAccess="true"]
`)
    const before = server.requests.length
    const result = await runJob(job)
    expect(result.errors).toEqual([])
    expect(
      server.requests
        .slice(before)
        .map((request) => `${request.method} ${request.url}`)
        .sort(),
    ).toEqual(['GET /empty', 'GET /plain'])
  })
})

describe("Chainlink's task types feedrunner refuses, each with its reason", () => {
  it('says why, for each', () => {
    const reasons = {
      vrfv2: "a VRF v2 job's task (it needs the node's VRF keys); not for directrequest jobs",
      vrfv2plus: "a VRF v2.5 job's task (it needs the node's VRF keys); not for directrequest jobs",
      ethgetblock:
        "it reads the node's head tracker, which feedrunner does not keep, and Chainlink's task reference does not list it: use ethcall, or $(jobRun.logBlockNumber) and friends",
      panic: "Chainlink's own test task: it crashes the node on purpose",
    }
    for (const [type, reason] of Object.entries(reasons))
      expect(messagesOf(`\n  t [type="${type}"]\n`), type).toEqual([
        `task type ${type} is not supported: ${reason}`,
      ])
  })
})

describe("under isolation, the network tasks run in the pipeline's own thread", () => {
  // Isolates get no environment and no resolver: a network task run there would not see the
  // operator's bridge URLs nor the host checks the runner set up.
  const isolation = new TaskIsolation({ threads: 1, memoryMb: 64, context: {} })
  afterAll(() => isolation.close())

  it("reaches a bridge at the URL of the run's environment", async () => {
    const job = taken(`
  fetch  [type="bridge" name="feed"]
  result [type="jsonparse" data="$(fetch)" path="data,result"]
  fetch -> result
`)
    const result = await runJob(job, { env: { BRIDGE_FEED_URL: `${base}/isolated` }, isolation })
    expect(result.errors).toEqual([])
    expect(result.outputs.map(String)).toEqual(['42'])
  })

  it("checks an http task's host from a variable with the run's resolver", async () => {
    const job = taken(`
  target [type="memo" value="\\"http://rebind.test/x\\""]
  fetch  [type="http" method=GET url="$(target)"]
  target -> fetch
`)
    const result = await runJob(job, {
      isolation,
      resolveHost: () => Promise.resolve([{ address: '10.0.0.7', family: 4 }]),
    })
    expect(result.errors).toEqual([expect.stringContaining('rebind.test resolves to 10.0.0.7')])
  })
})

describe('what a redirect carries on', () => {
  const hop: Hop = {
    method: 'POST',
    url: 'https://api.example/v1/x',
    body: '{"a":1}',
    headers: {
      Cookie: 'session=1',
      'Proxy-Authorization': 'Basic cHJveHk=',
      'Content-Type': 'application/json',
      'Content-Length': '7',
      'X-Id': '1',
    },
  }

  it('drops the cookie and the proxy credentials on a redirect to another origin, keeps them on the same', () => {
    expect(redirectTarget(307, 'https://other.example/y', hop, [hop.url], 'POST')?.headers).toEqual(
      {
        'Content-Type': 'application/json',
        'Content-Length': '7',
        'X-Id': '1',
      },
    )
    expect(redirectTarget(307, '/y', hop, [hop.url], 'POST')?.headers).toEqual(hop.headers)
  })

  it("drops the body's headers, its length included, when the redirect turns the request into a GET", () => {
    expect(redirectTarget(303, '/y', hop, [hop.url], 'POST')).toEqual({
      method: 'GET',
      url: 'https://api.example/y',
      headers: { Cookie: 'session=1', 'Proxy-Authorization': 'Basic cHJveHk=', 'X-Id': '1' },
    })
  })
})
