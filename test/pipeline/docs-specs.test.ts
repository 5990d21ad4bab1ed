import { AbiCoder, Interface, toUtf8Bytes, hexlify } from 'ethers'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  buildOracleRequest,
  parseJobSpecFile,
  RecordingChainAccess,
  runJob,
  selectorOf,
  type OracleRequest,
} from '../../src/pipeline/index.ts'
import { sendJson, startTestServer, type TestServer } from './support/http-server.ts'

// Chainlink's documented direct-request specs, run against a local HTTP server; the calldata each
// produces is compared with fulfillOracleRequest2 calldata built here independently with ethers.
const operator = new Interface([
  'function fulfillOracleRequest2(bytes32 requestId, uint256 payment, address callbackAddress, bytes4 callbackFunctionId, uint256 expiration, bytes data)',
])
const OPERATOR = '0xe7f1725E7734CE288F8367e1Bb143E90bb3F0512'
const CONSUMER = '0x9fE46736679d2D9a65F0992F2272dE9f3c7fa6e0'
const coder = AbiCoder.defaultAbiCoder()

let server: TestServer
beforeAll(async () => {
  server = await startTestServer((request, response) => {
    if (request.url.startsWith('/data/pricemultifull'))
      return sendJson(response, 200, {
        RAW: { ETH: { USD: { VOLUME24HOUR: 1.005, PRICE: 3012.41 } } },
      })
    if (request.url.startsWith('/big-api-response.json'))
      return sendJson(response, 200, { image: 'https://example.com/picture.png', name: 'big' })
    if (request.url.startsWith('/data/price'))
      return sendJson(response, 200, { BTC: 0.05123456, USD: 3012.41, EUR: 2801.999999 })
    sendJson(response, 404, { error: 'not found' })
  })
})
afterAll(() => server.close())

function expectedCalldata(request: OracleRequest, data: string): string {
  return operator.encodeFunctionData('fulfillOracleRequest2', [
    request.requestId,
    request.payment,
    request.callbackAddress,
    request.callbackFunctionId,
    request.cancelExpiration,
    data,
  ])
}

async function runSpec(
  file: string,
  request: OracleRequest,
): Promise<{ calldata: string; chain: RecordingChainAccess; outputs: unknown[] }> {
  const job = await parseJobSpecFile(`test/pipeline/specs/docs/${file}`)
  const chain = new RecordingChainAccess()
  const result = await runJob(job, {
    chain,
    jobRun: { logData: request.log.data, logTopics: request.log.topics },
    runId: 'docs-test',
  })
  expect(result.errors).toEqual([])
  expect(chain.transactions).toHaveLength(1)
  expect(chain.transactions[0]!.to).toBe(OPERATOR)
  return { calldata: chain.transactions[0]!.data, chain, outputs: result.outputs }
}

describe("Chainlink's documentation specs", () => {
  it('Get > Uint256: value = VOLUME24HOUR * 10^18, exactly', async () => {
    const request = buildOracleRequest({
      externalJobID: 'ca98366c-c731-4957-b8c0-12c72f05aeea',
      requester: CONSUMER,
      callbackFunction: 'fulfill(bytes32,uint256)',
      params: [
        ['get', `${server.url}/data/pricemultifull?fsyms=ETH&tsyms=USD`],
        ['path', 'RAW,ETH,USD,VOLUME24HOUR'],
        ['times', 10n ** 18n], // req._addInt("times", 10**18)
      ],
    })
    const { calldata } = await runSpec('get-uint256.toml', request)
    // 1.005 * 10^18 in float64 arithmetic would be 1004999999999999900; the pipeline is exact.
    const data = coder.encode(
      ['bytes32', 'uint256'],
      [request.requestId, 1_005_000_000_000_000_000n],
    )
    expect(calldata).toBe(expectedCalldata(request, data))
    expect(calldata.slice(0, 10)).toBe(
      selectorOf('fulfillOracleRequest2(bytes32,uint256,address,bytes4,uint256,bytes)'),
    )
  })

  it('Get > Bytes: the string at `image` as bytes', async () => {
    const request = buildOracleRequest({
      externalJobID: '7a97ff84-93ec-406d-9062-1b2531f9251a',
      requester: CONSUMER,
      callbackFunction: 'fulfillBytes(bytes32,bytes)',
      params: [
        ['get', `${server.url}/big-api-response.json`],
        ['path', 'image'],
      ],
    })
    const { calldata } = await runSpec('get-bytes.toml', request)
    const data = coder.encode(
      ['bytes32', 'bytes'],
      [request.requestId, hexlify(toUtf8Bytes('https://example.com/picture.png'))],
    )
    expect(calldata).toBe(expectedCalldata(request, data))
  })

  it('Multi-word: three fetches, each times 100000, in one callback', async () => {
    const request = buildOracleRequest({
      externalJobID: '53f97559-20cd-451a-8fe4-6f5087468395',
      requester: CONSUMER,
      callbackFunction: 'fulfillMultipleParameters(bytes32,uint256,uint256,uint256)',
      params: [
        ['urlBTC', `${server.url}/data/price?fsym=ETH&tsyms=BTC`],
        ['pathBTC', 'BTC'],
        ['urlUSD', `${server.url}/data/price?fsym=ETH&tsyms=USD`],
        ['pathUSD', 'USD'],
        ['urlEUR', `${server.url}/data/price?fsym=ETH&tsyms=EUR`],
        ['pathEUR', 'EUR'],
      ],
    })
    const { calldata } = await runSpec('multi-word.toml', request)
    // 0.05123456 * 100000 = 5123.456 -> 5123; 2801.999999 * 100000 = 280199999.9 -> 280199999 (toward zero).
    const data = coder.encode(
      ['bytes32', 'uint256', 'uint256', 'uint256'],
      [request.requestId, 5123n, 301241000n, 280199999n],
    )
    expect(calldata).toBe(expectedCalldata(request, data))
  })
})
