import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { chainsFromSettings, jobChainDefaults } from '../../src/config/chains.ts'
import { parseSettings } from '../../src/config/settings.ts'
import { loadJobRegistry } from '../../src/runner/job-registry.ts'

// A Chainlink node's directrequest delegate takes the greater of the job's and the chain's
// minIncomingConfirmations, and the chain's MinContractPayment when the job sets none
// (core/services/directrequest/delegate.go); feedrunner's chain settings do the same.

const KEY = '0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d'
const gameOdds = readFileSync(join(import.meta.dirname, '../../jobs/game-odds.toml'), 'utf8')

function tempFile(name: string, text: string): string {
  const file = join(mkdtempSync(join(tmpdir(), 'chain-defaults-')), name)
  writeFileSync(file, text)
  return file
}

describe('chain defaults for jobs', () => {
  it('RPC_URL: settings, else 1 confirmation on a dev chain and 3 elsewhere, and 10^13 juels', () => {
    const [chain] = chainsFromSettings(
      parseSettings({ RPC_URL: 'http://127.0.0.1:8545', NODE_PRIVATE_KEY: KEY }),
    )
    expect(jobChainDefaults(chain!, 31337)).toMatchObject({
      minIncomingConfirmations: 1,
      minContractPaymentLinkJuels: 10n ** 13n,
    })
    expect(jobChainDefaults(chain!, 1).minIncomingConfirmations).toBe(3)
    const [set] = chainsFromSettings(
      parseSettings({
        RPC_URL: 'http://127.0.0.1:8545',
        NODE_PRIVATE_KEY: KEY,
        MIN_INCOMING_CONFIRMATIONS: '6',
        MIN_CONTRACT_PAYMENT_LINK_JUELS: '0',
      }),
    )
    expect(jobChainDefaults(set!, 31337)).toMatchObject({
      minIncomingConfirmations: 6,
      minContractPaymentLinkJuels: 0n,
    })
  })

  it('CHAINS_FILE: each chain its own, the settings where a chain says nothing', () => {
    const file = tempFile(
      'chains.toml',
      `[[chains]]
chain_id = 1
min_incoming_confirmations = 12
min_contract_payment_link_juels = "100000000000000000"
endpoints = [{ url = "https://rpc.example" }]

[[chains]]
chain_id = 137
endpoints = [{ url = "https://polygon.example" }]
`,
    )
    const chains = chainsFromSettings(
      parseSettings({ CHAINS_FILE: file, NODE_PRIVATE_KEY: KEY, MIN_INCOMING_CONFIRMATIONS: '5' }),
    )
    expect(chains.map((chain) => jobChainDefaults(chain, chain.chainId!))).toMatchObject([
      { minIncomingConfirmations: 12, minContractPaymentLinkJuels: 10n ** 17n },
      { minIncomingConfirmations: 5, minContractPaymentLinkJuels: 10n ** 13n },
    ])
  })

  it.each([
    ['none in the spec', '', 3, 10n ** 13n],
    [
      'fewer than the chain (0, as the docs write it)',
      'minIncomingConfirmations = 0',
      3,
      10n ** 13n,
    ],
    ['more than the chain, written as text', 'minIncomingConfirmations = "7"', 7, 10n ** 13n],
    ['its own payment, lower than the chain', 'minContractPaymentLinkJuels = "1"', 3, 1n],
  ])('a job with %s', async (_name, line, confirmations, payment) => {
    const spec = gameOdds
      .replace(/^minIncomingConfirmations = .*\n/m, '')
      .replace(/^minContractPaymentLinkJuels = .*\n/m, '')
      .replace(/^evmChainID = .*$/m, `evmChainID = "1"\n${line}`)
    const dir = join(tempFile('odds.toml', spec), '..')
    const registry = await loadJobRegistry(dir, [1], {
      defaultsFor: () => ({ minIncomingConfirmations: 3, minContractPaymentLinkJuels: 10n ** 13n }),
    })
    const loaded = registry.jobs[0]!
    expect(loaded.job.spec).toMatchObject({
      minIncomingConfirmations: confirmations,
      minContractPaymentLinkJuels: payment,
    })
    // The listener waits as long as the job now says.
    expect([...registry.specFilters().values()][0]).toEqual({ minConfirmations: confirmations })
  })
})

describe('a job its chain cannot run as it says is refused at start', () => {
  it('forwardingAllowed on a chain without a forwarder: the runner does not start, naming the spec and the setting', async () => {
    const spec = gameOdds.replace(
      /^evmChainID = .*$/m,
      'evmChainID = "1"\nforwardingAllowed = true',
    )
    const dir = join(tempFile('forwarded.toml', spec), '..')
    const defaults = { minIncomingConfirmations: 3, minContractPaymentLinkJuels: 0n }
    const error = await loadJobRegistry(dir, [1], {
      refuseMisfits: true,
      defaultsFor: () => defaults,
    }).catch((caught: Error) => caught)
    expect((error as Error).message).toContain(
      `${join(dir, 'forwarded.toml')}: forwardingAllowed = true, and this chain has no forwarder`,
    )
    expect((error as Error).message).toContain('Set FORWARDER_ADDRESS')
    const served = await loadJobRegistry(dir, [1], {
      refuseMisfits: true,
      defaultsFor: () => ({ ...defaults, forwarder: '0xCf7Ed3AccA5a467e9e704C703E8D87F634fB0Fc9' }),
    })
    expect(served.jobs[0]!.job.spec.forwardingAllowed).toBe(true)
  })
})
