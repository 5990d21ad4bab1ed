import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Contract, JsonRpcProvider, Wallet } from 'ethers'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { fluxAggregatorInterface } from '../../src/chain/flux/aggregator.ts'
import { ANVIL_PRIVATE_KEYS, startAnvil, type Anvil } from '../../src/dev/anvil.ts'
import { runFeedrunner } from '../e2e/support/cli.ts'

// `feedrunner aggregator deploy|add-oracles|show|withdraw` as an operator runs them, against an anvil
// of their own; every outcome is read from the chain.

const LINK_ABI = ['function balanceOf(address) view returns (uint256)']

describe('feedrunner aggregator on a chain of its own', () => {
  let anvil: Anvil
  let provider: JsonRpcProvider
  const dir = mkdtempSync(join(tmpdir(), 'feedrunner-aggregator-'))
  let env: Record<string, string>
  const owner = new Wallet(ANVIL_PRIVATE_KEYS[0])
  const node = new Wallet(ANVIL_PRIVATE_KEYS[1])
  const other = new Wallet(ANVIL_PRIVATE_KEYS[2])
  let aggregator = ''
  let link = ''

  beforeAll(async () => {
    anvil = await startAnvil({ chainId: 4243 })
    provider = new JsonRpcProvider(anvil.rpcUrl, 4243, { staticNetwork: true, cacheTimeout: -1 })
    env = {
      RPC_URL: anvil.rpcUrl,
      DEV_STATE_FILE: join(dir, 'dev.json'),
      OWNER_KEY: ANVIL_PRIVATE_KEYS[0],
      NODE_PRIVATE_KEY: ANVIL_PRIVATE_KEYS[1],
    }
  }, 60_000)
  afterAll(async () => {
    provider?.destroy()
    await anvil?.stop()
    rmSync(dir, { recursive: true, force: true })
  })

  const cli = async (args: string[], extra: Record<string, string> = {}) => {
    const result = await runFeedrunner(args, { ...env, ...extra })
    expect(result.code, result.stderr).toBe(0)
    return JSON.parse(result.stdout) as Record<string, unknown>
  }

  it('deploy --fund: a FluxAggregator holding the LINK it was given, JSON alone on stdout', async () => {
    const deployed = await cli([
      'aggregator',
      'deploy',
      '--owner-key-env',
      'OWNER_KEY',
      '--payment',
      '0.1',
      '--decimals',
      '2',
      '--description',
      'floor price',
      '--fund',
      '2',
      '--json',
    ])
    aggregator = deployed.aggregator as string
    link = deployed.link as string
    expect(deployed).toMatchObject({ owner: owner.address, funded: String(2n * 10n ** 18n) })
    const linkToken = new Contract(link, LINK_ABI, provider)
    expect(await linkToken.getFunction('balanceOf')(aggregator)).toBe(2n * 10n ** 18n)
  }, 120_000)

  it('add-oracles: the node key by default, others with --oracle; a bad round size is refused', async () => {
    const bad = await runFeedrunner(
      [
        'aggregator',
        'add-oracles',
        '--owner-key-env',
        'OWNER_KEY',
        '--aggregator',
        aggregator,
        '--min-submissions',
        '3',
      ],
      env,
    )
    expect(bad.code).toBe(1)
    expect(bad.stderr).toContain('need 1 <= min <= max <= oracles')
    await cli([
      'aggregator',
      'add-oracles',
      '--owner-key-env',
      'OWNER_KEY',
      '--aggregator',
      aggregator,
      '--min-submissions',
      '1',
      '--json',
    ])
    const added = await cli([
      'aggregator',
      'add-oracles',
      '--owner-key-env',
      'OWNER_KEY',
      '--aggregator',
      aggregator,
      '--oracle',
      other.address,
      '--min-submissions',
      '2',
      '--json',
    ])
    expect(added.oracles).toEqual([node.address, other.address])
    const contract = new Contract(aggregator, fluxAggregatorInterface, provider)
    expect(await contract.getFunction('getOracles')()).toEqual([node.address, other.address])
    expect(await contract.getFunction('minSubmissionCount')()).toBe(2n)
  }, 120_000)

  it("show --json: rounds, answers, oracles, funds and this node's withdrawable payment", async () => {
    for (const [key, value] of [
      [ANVIL_PRIVATE_KEYS[1], 1200n],
      [ANVIL_PRIVATE_KEYS[2], 1300n],
    ] as const) {
      const contract = new Contract(aggregator, fluxAggregatorInterface, new Wallet(key, provider))
      await (await contract.getFunction('submit')(1, value)).wait()
    }
    const shown = await cli(['aggregator', 'show', '--aggregator', aggregator, '--json'])
    expect(shown).toMatchObject({
      aggregator,
      description: 'floor price',
      decimals: 2,
      minSubmissionCount: 2,
      maxSubmissionCount: 2,
      latestRound: { roundId: '1', answer: '1250', value: '12.5' },
      availableFunds: String(18n * 10n ** 17n),
      allocatedFunds: String(2n * 10n ** 17n),
      nodeWithdrawable: String(10n ** 17n),
    })
    expect(shown.oracles).toEqual([
      {
        address: node.address,
        admin: owner.address,
        withdrawable: String(10n ** 17n),
        thisNode: true,
      },
      {
        address: other.address,
        admin: owner.address,
        withdrawable: String(10n ** 17n),
        thisNode: false,
      },
    ])
    const readable = await runFeedrunner(['aggregator', 'show', '--aggregator', aggregator], env)
    expect(readable.stdout).toContain('round 1: 12.5')
  }, 120_000)

  it("withdraw: the node's payment to a recipient, signed by its admin; anyone else is refused", async () => {
    const refused = await runFeedrunner(
      ['aggregator', 'withdraw', '--owner-key-env', 'NOT_ADMIN', '--aggregator', aggregator],
      { ...env, NOT_ADMIN: ANVIL_PRIVATE_KEYS[3] },
    )
    expect(refused.code).toBe(1)
    expect(refused.stderr).toContain('is not the admin of the oracle')
    const recipient = new Wallet(ANVIL_PRIVATE_KEYS[4]).address
    const withdrawn = await cli([
      'aggregator',
      'withdraw',
      '--owner-key-env',
      'OWNER_KEY',
      '--aggregator',
      aggregator,
      '--to',
      recipient,
      '--json',
    ])
    expect(withdrawn).toMatchObject({ oracle: node.address, recipient, amount: String(10n ** 17n) })
    const linkToken = new Contract(link, LINK_ABI, provider)
    expect(await linkToken.getFunction('balanceOf')(recipient)).toBe(10n ** 17n)
    const shown = await cli(['aggregator', 'show', '--aggregator', aggregator, '--json'])
    expect(shown.nodeWithdrawable).toBe('0')
  }, 120_000)
})
