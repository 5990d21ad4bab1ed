import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { chainsFromSettings } from '../../src/config/chains.ts'
import { parseSettings } from '../../src/config/settings.ts'

const KEY_A = '0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d'
const KEY_B = '0x5de4111afa1a4b94908f83103eb1f1706367c2e68ca870fc3fb9a804cdab365a'

function chainsFile(text: string): string {
  const file = join(mkdtempSync(join(tmpdir(), 'chains-')), 'chains.toml')
  writeFileSync(file, text)
  return file
}

function problemsOf(text: string, env: Record<string, string> = {}): string {
  const file = chainsFile(text)
  try {
    chainsFromSettings(parseSettings({ CHAINS_FILE: file }), env)
  } catch (error) {
    return (error as Error).message.replaceAll(file, 'FILE')
  }
  throw new Error('no problem found')
}

describe('chains configuration', () => {
  it('reads chains, endpoints and keys by environment variable name', () => {
    const file = chainsFile(`
[[chains]]
chain_id = 1
name = "mainnet"
keys_env = ["KEY_A"]
confirmations = 3
gas = { limit = 400000, priority_fee_wei = "2000000000" }
endpoints = [
  { url = "https://rpc.example/v3/secret-key" },
  { url = "wss://other.example", send_only = true },
]

[[chains]]
chain_id = 137
keys_env = ["KEY_A", "KEY_B"]
[[chains.endpoints]]
url = "http://127.0.0.1:8545"
`)
    const chains = chainsFromSettings(parseSettings({ CHAINS_FILE: file }), {
      KEY_A,
      KEY_B,
    })
    expect(chains.map((chain) => chain.chainId)).toEqual([1, 137])
    expect(chains[0]).toMatchObject({
      label: 'chain 1 (mainnet)',
      keys: [KEY_A],
      confirmations: 3,
      gas: { limit: 400_000, priorityFeeWei: 2_000_000_000n },
    })
    expect(chains[0]!.endpoints.map((endpoint) => endpoint.sendOnly)).toEqual([false, true])
    expect(chains[0]!.endpoints[1]!.setting).toBe(`CHAINS_FILE ${file} chain 1 endpoint 2`)
    expect(chains[1]).toMatchObject({ keys: [KEY_A, KEY_B], confirmations: 1 })
  })

  it('keeps RPC_URL and NODE_PRIVATE_KEY as the one-chain shorthand', () => {
    const [chain, ...others] = chainsFromSettings(
      parseSettings({ RPC_URL: 'http://127.0.0.1:8545', NODE_PRIVATE_KEY: KEY_A }),
    )
    expect(others).toEqual([])
    expect(chain).toMatchObject({ chainId: undefined, keys: [KEY_A] })
    expect(chain!.endpoints).toEqual([
      { url: 'http://127.0.0.1:8545', sendOnly: false, setting: 'RPC_URL' },
    ])
  })

  it('names the file, the chain and the field', () => {
    const message = problemsOf(`
[[chains]]
chain_id = 5
keys_env = ["KEY_A"]
endpoints = [{ url = "ftp://rpc.example/secret-key" }, { url = "http://a", sendonly = true }]
`)
    expect(message).toContain(
      'CHAINS_FILE FILE: chain 5: endpoints[1].url: expected an http(s):// or ws(s):// JSON-RPC URL',
    )
    expect(message).toContain('CHAINS_FILE FILE: chain 5: endpoints[2]: unknown field sendonly')
    expect(message).not.toContain('secret-key')
  })

  it('never prints a key, whether it is in the file or in the variable named', () => {
    const inFile = problemsOf(`
[[chains]]
chain_id = 5
keys_env = ["${KEY_A}"]
endpoints = [{ url = "http://a" }]
`)
    expect(inFile).toContain('chain 5: keys_env[1]: expected the name of an environment variable')
    expect(inFile).not.toContain(KEY_A.slice(2, 20))
    const badValue = problemsOf(
      `
[[chains]]
chain_id = 5
keys_env = ["KEY_A", "MISSING"]
endpoints = [{ url = "http://a" }]
`,
      { KEY_A: `${KEY_A.slice(0, -4)}zzzz` },
    )
    expect(badValue).toContain('chain 5: keys_env: KEY_A is not a private key')
    expect(badValue).toContain('chain 5: keys_env: MISSING is not set')
    expect(badValue).not.toContain(KEY_A.slice(2, 20))
  })

  it('refuses TOML that does not parse, duplicate chains and a chain that only sends', () => {
    expect(problemsOf('[[chains]\nchain_id = 1')).toMatch(
      /CHAINS_FILE FILE: not valid TOML at line 1, column \d+/,
    )
    const message = problemsOf(`
[[chains]]
chain_id = 7
endpoints = [{ url = "http://a", send_only = true }]
[[chains]]
chain_id = 7
endpoints = [{ url = "http://b" }]
`)
    expect(message).toContain('chain 7 is declared twice')
    expect(message).toContain('chain 7: every endpoint is send_only')
    expect(message).toContain('NODE_PRIVATE_KEY: required for chain 7, which has no keys_env')
  })

  it('refuses RPC_URL beside CHAINS_FILE', () => {
    expect(() =>
      chainsFromSettings(parseSettings({ CHAINS_FILE: 'x.toml', RPC_URL: 'http://a:1' })),
    ).toThrow(/RPC_URL and CHAINS_FILE are both set/)
  })
})
