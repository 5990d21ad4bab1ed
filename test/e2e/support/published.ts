import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { hexlify, toUtf8Bytes } from 'ethers'
import { DEV_OPERATOR_ADDRESS } from '../../../src/dev/deploy.ts'
import { sendJson, type Handler } from '../../pipeline/support/http-server.ts'

/**
 * Chainlink's published directrequest specs (test/e2e/specs: the docs' job spec pages, the docs'
 * samples, the migration guide) with the addresses an operator fills in, the request each one's
 * consumer makes, what the local API answers and the value that must end up on chain.
 */
export interface PublishedSpec {
  /** test/e2e/specs/<file> */
  file: string
  /** Request parameters, as a consumer's `req._add` calls make them. */
  params: Array<[string, string]>
  /** The answer the consumer must store; undefined for a spec that fulfils nothing. */
  expected?: unknown
  /** The spec's own words say it goes through the chain's AuthorizedForwarder. */
  forwarded?: boolean
  /** Why a run of it fails as it would on a Chainlink node, if it does. */
  refusedAtRun?: RegExp
}

const VOLUME = 123456.789
const BTC = 0.05123456
const USD = 3012.41
const EUR = 2801.999999
const IMAGE = 'https://example.com/picture.png'
const WORD = `0x${'ab'.repeat(31)}01`
const GAS = { fast: '31', medium: '25', safe: '20' } as const

/** The local API every spec's fetches go to (CryptoCompare, CoinGecko, Etherscan ... as shaped here). */
export const publishedApi: Handler = (request, response) => {
  const path = request.url.split('?')[0]
  if (path === '/data/pricemultifull')
    return sendJson(response, 200, { RAW: { ETH: { USD: { VOLUME24HOUR: VOLUME } } } })
  if (path === '/data/price') return sendJson(response, 200, { BTC, USD, EUR })
  if (path === '/int') return sendJson(response, 200, { value: -12.345 })
  if (path === '/bool') return sendJson(response, 200, { isActive: true })
  if (path === '/exchanges')
    return sendJson(response, 200, [{ id: 'binance' }, { id: 'gdax' }, { id: 'kraken' }])
  if (path === '/image') return sendJson(response, 200, { image: IMAGE })
  if (path === '/word') return sendJson(response, 200, { id: WORD })
  if (path === '/ticker') return sendJson(response, 200, { last: '1.23' })
  if (path === '/spec-format') return sendJson(response, 200, { USD })
  if (path === '/etherscan') {
    const speed = (JSON.parse(request.body) as { data: { speed: keyof typeof GAS } }).data.speed
    return sendJson(response, 200, { data: { result: GAS[speed] }, statusCode: 200 })
  }
  sendJson(response, 404, { error: `no ${request.url}` })
}

export function publishedSpecs(api: string): PublishedSpec[] {
  const volume = [
    ['get', `${api}/data/pricemultifull?fsyms=ETH&tsyms=USD`],
    ['path', 'RAW,ETH,USD,VOLUME24HOUR'],
    ['times', '1000000000000000000'],
  ] as Array<[string, string]>
  const exchanges = [
    ['get', `${api}/exchanges?per_page=10`],
    ['path', '1,id'],
  ] as Array<[string, string]>
  const volumeTimes1e18 = 123_456_789_000_000_000_000_000n
  return [
    { file: 'chainlink-get-uint256.toml', params: volume, expected: volumeTimes1e18 },
    { file: 'docs-get-uint256.toml', params: volume, expected: volumeTimes1e18 },
    {
      file: 'forwarder-get-uint256.toml',
      params: volume,
      expected: volumeTimes1e18,
      forwarded: true,
    },
    {
      file: 'docs-get-int256.toml',
      params: [
        ['get', `${api}/int`],
        ['path', 'value'],
        ['times', '100'],
      ],
      // -1234.5 truncated toward zero, as Chainlink's ethabiencode does.
      expected: -1234n,
    },
    {
      file: 'docs-get-bool.toml',
      params: [
        ['get', `${api}/bool`],
        ['path', 'isActive'],
      ],
      expected: true,
    },
    { file: 'sample-get-string.toml', params: exchanges, expected: 'gdax' },
    { file: 'forwarder-get-string.toml', params: exchanges, expected: 'gdax', forwarded: true },
    {
      file: 'docs-get-bytes.toml',
      params: [
        ['get', `${api}/image`],
        ['path', 'image'],
      ],
      expected: hexlify(toUtf8Bytes(IMAGE)),
    },
    {
      file: 'sample-get-bytes32.toml',
      params: [
        ['get', `${api}/word`],
        ['path', 'id'],
      ],
      expected: WORD,
    },
    {
      file: 'docs-multi-word.toml',
      params: (['BTC', 'USD', 'EUR'] as const).flatMap((coin): Array<[string, string]> => [
        [`url${coin}`, `${api}/data/price?fsym=ETH&tsyms=${coin}`],
        [`path${coin}`, coin],
      ]),
      // Each times 100000, truncated toward zero: 5123.456, 301241000, 280199999.9.
      expected: [5123n, 301241000n, 280199999n],
    },
    { file: 'docs-existing-job.toml', params: [], expected: [31n, 25n, 20n] },
    { file: 'migration-simple-fetch.toml', params: [], expected: 123n },
    {
      file: 'migration-runlog-cbor.toml',
      params: [
        ['url', `${api}/ticker`],
        ['path', 'last'],
      ],
      // Its fetch takes the URL from the request and does not allow unrestricted access: a node
      // refuses a loopback source the same way.
      refusedAtRun:
        /a special-purpose address \(127\.0\.0\.0\/8 Loopback.*a URL from a variable may not reach it unless allowUnrestrictedNetworkAccess/,
    },
    { file: 'docs-spec-format.toml', params: [] },
  ]
}

/**
 * A spec as an operator adapts it: the dev Operator for the placeholder (and for the docs' example
 * Operator address), the dev chain for Sepolia's or mainnet's id, the node's key for EOA_ADDRESS, and
 * the local API for the literal example URLs.
 */
export function filledSpec(file: string, fill: { api: string; nodeAddress: string }): string {
  return readFileSync(join(import.meta.dirname, '../specs', file), 'utf8')
    .replaceAll('YOUR_OPERATOR_CONTRACT_ADDRESS', DEV_OPERATOR_ADDRESS)
    .replaceAll('YOUR_ORACLE_CONTRACT_ADDRESS', DEV_OPERATOR_ADDRESS)
    .replaceAll('0x613a38AC1659769640aaE063C651F48E0250454C', DEV_OPERATOR_ADDRESS)
    .replace(/^evmChainID\s*=\s*("11155111"|1)$/m, 'evmChainID = "31337"')
    .replaceAll('EOA_ADDRESS', fill.nodeAddress)
    .replaceAll('http://example.com', `${fill.api}/spec-format`)
    .replaceAll('https://bitstamp.net/api/ticker/', `${fill.api}/ticker`)
}
