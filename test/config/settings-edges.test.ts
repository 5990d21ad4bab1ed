import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import {
  allFamilyUrls,
  bridgeUrl,
  bridgeUrlSetting,
  DEFAULT_SETTINGS,
  endpointOf,
  familyBaseUrl,
  familyCacheTtlMs,
  familyRateLimitPerSecond,
  familyUrlSetting,
  loadDotEnv,
  parseSettings,
  presentVariables,
  SENSITIVE_SETTINGS,
  SETTING_NAMES,
  SettingsError,
} from '../../src/config/settings.ts'

// The edges of the settings: each bound at its last accepted and first refused value, each message
// as the operator reads it, and the helpers that read settings by family and bridge name.

function problem(env: Record<string, string>): string {
  try {
    parseSettings(env)
  } catch (error) {
    if (error instanceof SettingsError) return error.problems.join(' | ')
    throw error
  }
  return 'accepted'
}

describe('bounds and formats, at the edge', () => {
  it.each([
    ['EA_PORT', '65535', '65536', 'EA_PORT: expected a port number from 1 to 65535 (got "65536")'],
    ['EA_PORT', '1', '0', 'EA_PORT: expected a port number from 1 to 65535 (got "0")'],
    ['METRICS_PORT', '0', '-1', 'METRICS_PORT: expected a port number from 0 to 65535 (got "-1")'],
    [
      'HEAP_GROWTH_PERCENT',
      '300',
      '301',
      'HEAP_GROWTH_PERCENT: expected a whole number of percent from 0 to 300 (got "301")',
    ],
    [
      'JSON_MAX_DEPTH',
      '10000',
      '10001',
      'JSON_MAX_DEPTH: expected a whole number of levels from 1 to 10000 (got "10001")',
    ],
    [
      'RUN_ISOLATE_THREADS',
      '64',
      '65',
      'RUN_ISOLATE_THREADS: expected a whole number of threads from 1 to 64 (got "65")',
    ],
    [
      'RUN_ISOLATE_MEMORY_MB',
      '32',
      '31',
      'RUN_ISOLATE_MEMORY_MB: expected a whole number of MB, 32 or more (got "31")',
    ],
    [
      'MIN_INCOMING_CONFIRMATIONS',
      '1000',
      '1001',
      'MIN_INCOMING_CONFIRMATIONS: expected a whole number of blocks from 0 to 1000 (got "1001")',
    ],
    [
      'TX_BROADCAST_INTERVAL_MS',
      '10000',
      '10001',
      'TX_BROADCAST_INTERVAL_MS: expected a whole number of ms from 0 to 10000 (got "10001")',
    ],
    [
      'RUNNER_FROM_BLOCK',
      '0',
      '-1',
      'RUNNER_FROM_BLOCK: expected a block number, 0 or more (got "-1")',
    ],
    [
      'REQUESTER_MAX_CONCURRENT_RUNS',
      '0',
      '-1',
      'REQUESTER_MAX_CONCURRENT_RUNS: expected a whole number of runs, 0 or more (got "-1")',
    ],
    [
      'RUNNER_CONCURRENCY',
      '1',
      '1.5',
      'RUNNER_CONCURRENCY: expected a whole number of requests, 1 or more (got "1.5")',
    ],
    [
      'MIN_CONTRACT_PAYMENT_LINK_JUELS',
      '9'.repeat(30),
      '9'.repeat(31),
      `MIN_CONTRACT_PAYMENT_LINK_JUELS: expected a whole number of LINK juels (got "${'9'.repeat(31)}")`,
    ],
    [
      'DASHBOARD_PATH',
      '/ops/board-1',
      '/dashboard/',
      'DASHBOARD_PATH: expected a path such as /dashboard (no trailing slash) (got "/dashboard/")',
    ],
    [
      'QUEUE_PREFIX',
      'a-b_c.d:{tag}',
      'a b',
      'QUEUE_PREFIX: expected letters, digits and _.:- only, and {braces} around a hash tag (got "a b")',
    ],
    [
      'REDIS_URL',
      'rediss://h:1',
      'http://h:1',
      'REDIS_URL: expected redis://host:port[/db], rediss://... or redis+cluster://host:port[,host:port...] (got h:1)',
    ],
    [
      'RPC_URL',
      'wss://node.example/key',
      'xhttp://node.example',
      'RPC_URL: expected an http(s):// or ws(s):// JSON-RPC URL (got node.example)',
    ],
    [
      'CONSUMER_ADDRESS',
      `0x${'aB'.repeat(20)}`,
      `0x${'a'.repeat(41)}`,
      `CONSUMER_ADDRESS: expected an address: 0x and 40 hex digits (got "0x${'a'.repeat(41)}")`,
    ],
    [
      'FORWARDER_ADDRESS',
      `0x${'1'.repeat(40)}`,
      `x0x${'1'.repeat(40)}`,
      `FORWARDER_ADDRESS: expected an address: 0x and 40 hex digits (got "x0x${'1'.repeat(40)}")`,
    ],
    ['LOG_FORMAT', 'json', 'xml', 'LOG_FORMAT: expected one of json, pretty (got "xml")'],
    ['ALLOW_CLIENT_KEYS', '1', 'yes', 'ALLOW_CLIENT_KEYS: expected true or false (got "yes")'],
    [
      'SPORTS_URL',
      'http://feeds.example',
      'feeds',
      'SPORTS_URL: expected a URL such as http://127.0.0.1:8080 (got a value that is not a URL)',
    ],
  ])('%s accepts %s and refuses %s', (name, accepted, refused, message) => {
    expect(problem({ [name]: accepted })).toBe('accepted')
    expect(problem({ [name]: refused })).toBe(message)
  })

  it('reads booleans and lists as they are written', () => {
    const settings = parseSettings({
      ALLOW_CLIENT_KEYS: '1',
      DASHBOARD_ENABLED: 'true',
      DASHBOARD_READ_ONLY: '0',
      FEEDS_SERVER_KEYS: ' k1 , ,k2,',
      FEEDS_SERVER_SIGNERS: `0x${'1'.repeat(40)}`,
    })
    expect(settings.ALLOW_CLIENT_KEYS).toBe(true)
    expect(settings.DASHBOARD_ENABLED).toBe(true)
    expect(settings.DASHBOARD_READ_ONLY).toBe(false)
    expect(settings.FEEDS_SERVER_KEYS).toEqual(['k1', 'k2'])
    expect(problem({ FEEDS_SERVER_SIGNERS: `0x${'1'.repeat(40)},0x12` })).toBe(
      'FEEDS_SERVER_SIGNERS (item 2): expected an address: 0x and 40 hex digits (got "0x1111111111111111111111111111111111111111,0x12")',
    )
  })

  it('accepts the largest private key below the curve order, and never shows a secret', () => {
    const largest = '0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364140'
    expect(problem({ NODE_PRIVATE_KEY: largest })).toBe('accepted')
    expect(problem({ NODE_PRIVATE_KEY: '0x1234' })).toBe(
      'NODE_PRIVATE_KEY: expected a 0x-prefixed 32-byte hex private key',
    )
    expect(problem({ DASHBOARD_TOKEN: 'short' })).toBe(
      'DASHBOARD_TOKEN: expected a random secret of at least 24 characters',
    )
    expect(problem({ FEED_API_KEY: 'x'.repeat(24) })).toBe('accepted')
    expect(SENSITIVE_SETTINGS).toEqual(
      expect.arrayContaining(['DASHBOARD_TOKEN', 'KEYSTORE_PASSWORD', 'FEEDS_SERVER_KEYS']),
    )
    expect(SENSITIVE_SETTINGS).not.toContain('RPC_URL')
  })

  it('needs a hash tag in the prefix for a Redis Cluster, and only there', () => {
    const cluster = 'redis+cluster://a:1,b:2'
    expect(problem({ REDIS_URL: cluster, QUEUE_PREFIX: 'fr' })).toBe(
      'QUEUE_PREFIX: a Redis Cluster (REDIS_URL redis+cluster://...) needs a hash tag in braces, e.g. {fr} (got "fr")',
    )
    expect(problem({ REDIS_URL: cluster, QUEUE_PREFIX: 'x{fr}' })).toBe('accepted')
    expect(problem({ REDIS_URL: 'redis://a:1', QUEUE_PREFIX: 'fr' })).toBe('accepted')
    expect(problem({ REDIS_URL: cluster })).toBe('accepted')
  })

  it('reports a misspelt name with the problems of the schema, and alone', () => {
    expect(problem({ RPC_ULR: 'http://x' })).toContain('RPC_ULR')
    expect(problem({ RPC_ULR: 'http://x', EA_PORT: 'x' })).toMatch(/RPC_ULR.* \| EA_PORT: /)
  })
})

describe('the environment', () => {
  it('takes an empty variable as unset', () => {
    expect(presentVariables({ A: '', B: 'b', C: undefined })).toEqual({ B: 'b' })
    expect(parseSettings({ EA_PORT: '' }).EA_PORT).toBe(8080)
    expect(DEFAULT_SETTINGS.EA_PORT).toBe(8080)
    expect(SETTING_NAMES).toContain('EA_PORT')
  })

  it('reads .env when there is one, and says what is wrong with one it cannot read', () => {
    const dir = mkdtempSync(join(tmpdir(), 'feedrunner-dotenv-edges-'))
    try {
      expect(loadDotEnv(join(dir, 'none'))).toBeUndefined()
      const file = join(dir, '.env')
      writeFileSync(file, 'FEEDRUNNER_EDGES_TEST=1\n')
      expect(loadDotEnv(file)).toBe(file)
      expect(process.env.FEEDRUNNER_EDGES_TEST).toBe('1')
      expect(() => loadDotEnv(dir)).toThrow(
        new RegExp(
          `^Invalid settings:\\n  ${dir}: could not be read \\(.*\\); fix or remove the file$`,
        ),
      )
    } finally {
      delete process.env.FEEDRUNNER_EDGES_TEST
      rmSync(dir, { recursive: true, force: true })
    }
  })
})

describe('URLs in messages', () => {
  it('shows only the host and port, with the default port of the scheme', () => {
    expect(endpointOf('https://user:pw@rpc.example/v2/key?x=1')).toBe('rpc.example:443')
    expect(endpointOf('http://rpc.example/')).toBe('rpc.example:80')
    expect(endpointOf('ws://rpc.example')).toBe('rpc.example:80')
    expect(endpointOf('wss://rpc.example')).toBe('rpc.example:443')
    expect(endpointOf('redis://:pw@cache:7000/0')).toBe('cache:7000')
    expect(endpointOf('redis://cache')).toBe('cache:6379')
    expect(endpointOf('rediss://cache')).toBe('cache:6379')
    expect(endpointOf('ftp://files.example')).toBe('files.example')
    expect(endpointOf('file:///etc/passwd')).toBe('a URL without a host')
    expect(endpointOf('not a url')).toBe('a value that is not a URL')
  })

  it('shows the nodes of a cluster without its credentials', () => {
    expect(endpointOf('redis+cluster://user:pw@a:1,b:2/0')).toBe('a:1,b:2')
    expect(endpointOf('redis+cluster://a:1,b:2?x')).toBe('a:1,b:2')
  })
})

describe('settings by family and bridge', () => {
  const settings = parseSettings({
    SPORTS_URL: 'http://sports.example',
    RATE_LIMIT_NFT_PER_SECOND: '7',
    CACHE_TTL_WEATHER_MS: '9',
  })

  it('reads the setting of each family', () => {
    expect(familyUrlSetting('blockchain')).toBe('BLOCKCHAIN_URL')
    expect(familyBaseUrl(settings, 'sports')).toBe('http://sports.example')
    expect(() => familyBaseUrl(settings, 'nft')).toThrow(
      'NFT_URL: required for the nft feeds (not set)',
    )
    expect(familyRateLimitPerSecond(settings, 'nft')).toBe(7)
    expect(familyCacheTtlMs(settings, 'weather')).toBe(9)
    expect(familyCacheTtlMs(settings, 'sports')).toBe(30_000)
    expect(allFamilyUrls('http://one')).toEqual({
      SPORTS_URL: 'http://one',
      BLOCKCHAIN_URL: 'http://one',
      NFT_URL: 'http://one',
      WEATHER_URL: 'http://one',
    })
  })

  it('names a bridge variable in capitals, other characters as _', () => {
    expect(bridgeUrlSetting('data-feed.v2')).toBe('BRIDGE_DATA_FEED_V2_URL')
    expect(bridgeUrlSetting('Ea1')).toBe('BRIDGE_EA1_URL')
  })

  it('reads a bridge URL, unset when empty, and refuses one that is not a URL', () => {
    expect(bridgeUrl({ BRIDGE_EA_URL: 'http://ea.example:1' }, 'ea')).toBe('http://ea.example:1')
    expect(bridgeUrl({ BRIDGE_EA_URL: 'http://ea.example:1' }, 'ea')).toBe('http://ea.example:1')
    expect(bridgeUrl({ BRIDGE_EA_URL: '' }, 'ea')).toBeUndefined()
    expect(bridgeUrl({}, 'ea')).toBeUndefined()
    expect(() => bridgeUrl({ BRIDGE_EA_URL: 'nope' }, 'ea')).toThrow(
      'BRIDGE_EA_URL: expected a URL such as http://127.0.0.1:8080 (got a value that is not a URL)',
    )
    // A refused value is refused every time, not remembered as checked.
    expect(() => bridgeUrl({ BRIDGE_EA_URL: 'nope' }, 'ea')).toThrow(SettingsError)
  })
})
