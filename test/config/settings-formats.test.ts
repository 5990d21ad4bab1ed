import { describe, expect, it } from 'vitest'
import { parseSettings, SettingsError } from '../../src/config/settings.ts'

// The formats of the settings an operator pastes (keys, addresses, URLs, paths, tokens): each value
// whole, or refused naming the setting, never read as far as it looks right.

const KEY = `0x${'11'.repeat(32)}`
const ADDRESS = `0x${'ab'.repeat(20)}`

function refusal(env: Record<string, string>): string {
  try {
    parseSettings(env)
  } catch (error) {
    expect(error).toBeInstanceOf(SettingsError)
    return (error as Error).message
  }
  throw new Error(`accepted ${JSON.stringify(env)}`)
}

describe('settings read whole, not by their first or last characters', () => {
  it('takes a private key of exactly 0x and 64 hex digits', () => {
    expect(parseSettings({ NODE_PRIVATE_KEY: KEY }).NODE_PRIVATE_KEY).toBe(KEY)
    for (const wrong of [`${KEY}00`, `x${KEY}`, `${KEY.slice(0, -1)}g`])
      expect(refusal({ NODE_PRIVATE_KEY: wrong })).toContain('NODE_PRIVATE_KEY')
    expect(refusal({ NODE_PRIVATE_KEYS: `${KEY},${KEY}ff` })).toContain('NODE_PRIVATE_KEYS')
  })

  it('takes an address of exactly 0x and 40 hex digits, in every setting that holds one', () => {
    expect(parseSettings({ CONSUMER_ADDRESS: ADDRESS }).CONSUMER_ADDRESS).toBe(ADDRESS)
    expect(parseSettings({ FORWARDER_ADDRESS: ADDRESS }).FORWARDER_ADDRESS).toBe(ADDRESS)
    for (const name of ['CONSUMER_ADDRESS', 'FORWARDER_ADDRESS', 'FEEDS_SERVER_SIGNERS'])
      for (const wrong of [`${ADDRESS}ab`, `00${ADDRESS}`])
        expect(refusal({ [name]: wrong })).toContain(name)
  })

  it('takes only the URL schemes each connection speaks', () => {
    for (const url of ['http://127.0.0.1:8545', 'https://rpc.example', 'ws://127.0.0.1:8546'])
      expect(parseSettings({ RPC_URL: url }).RPC_URL).toBe(url)
    expect(parseSettings({ RPC_URL: 'wss://rpc.example' }).RPC_URL).toBe('wss://rpc.example')
    expect(refusal({ RPC_URL: 'ftp://rpc.example' })).toContain('RPC_URL')
    for (const url of ['redis://127.0.0.1:6379', 'rediss://cache.example:6380'])
      expect(parseSettings({ REDIS_URL: url }).REDIS_URL).toBe(url)
    expect(refusal({ REDIS_URL: 'http://127.0.0.1:6379' })).toContain('REDIS_URL')
  })

  it('takes a dashboard path that starts with a slash and does not end with one', () => {
    expect(parseSettings({ DASHBOARD_PATH: '/ops/queues' }).DASHBOARD_PATH).toBe('/ops/queues')
    for (const wrong of ['/ops/', 'ops', '/ops?x'])
      expect(refusal({ DASHBOARD_PATH: wrong })).toContain('DASHBOARD_PATH')
  })

  it("takes an operator's runs token of 32 characters or more, and no shorter", () => {
    const long = 'operator-token-'.padEnd(48, 'x')
    expect(parseSettings({ RUNS_API_TOKEN: long }).RUNS_API_TOKEN).toBe(long)
    expect(parseSettings({ RUNS_API_TOKEN: 'x'.repeat(32) }).RUNS_API_TOKEN).toHaveLength(32)
    const message = refusal({ RUNS_API_TOKEN: 'x'.repeat(31) })
    expect(message).toContain('RUNS_API_TOKEN')
    expect(message).toContain('at least 32 characters')
    // The refused value is sensitive: the message names the setting, never the token.
    expect(message).not.toContain('x'.repeat(31))
  })

  it('takes trusted proxies as addresses or CIDR ranges, and refuses anything else by name', () => {
    expect(
      parseSettings({ ADAPTER_TRUSTED_PROXIES: '10.0.0.5,10.1.0.0/16' }).ADAPTER_TRUSTED_PROXIES,
    ).toHaveLength(2)
    expect(refusal({ ADAPTER_TRUSTED_PROXIES: '10.0.0.5,proxy.example' })).toContain(
      'ADAPTER_TRUSTED_PROXIES',
    )
  })
})
