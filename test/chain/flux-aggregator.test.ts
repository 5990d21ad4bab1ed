import { Contract, JsonRpcProvider, NonceManager, Wallet } from 'ethers'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { fluxArtifacts } from '../../src/chain/artifacts.ts'
import {
  fluxAggregatorInterface,
  FLUX_TOPICS,
  readAggregator,
  readOracleRoundState,
} from '../../src/chain/flux/aggregator.ts'
import {
  addOracles,
  deployAggregator,
  withdrawOraclePayment,
} from '../../src/chain/flux/aggregator-admin.ts'
import { ANVIL_PRIVATE_KEYS, startAnvil, type Anvil } from '../../src/dev/anvil.ts'

// Chainlink's own FluxAggregator, compiled from @chainlink/contracts 0.8.0's v0.6 sources with solc
// 0.6.6, deployed on anvil: it takes oracles, accepts their submissions, and answers the median.

describe("Chainlink's FluxAggregator on anvil", () => {
  let anvil: Anvil
  let provider: JsonRpcProvider
  let aggregator = ''
  const owner = () => new NonceManager(new Wallet(ANVIL_PRIVATE_KEYS[0], provider))
  const oracles = [1, 2, 3].map((i) => new Wallet(ANVIL_PRIVATE_KEYS[i]!).address)

  beforeAll(async () => {
    anvil = await startAnvil()
    provider = new JsonRpcProvider(anvil.rpcUrl, anvil.chainId, {
      staticNetwork: true,
      cacheTimeout: -1,
      pollingInterval: 100,
    })
  }, 120_000)
  afterAll(async () => {
    provider?.destroy()
    await anvil?.stop()
  })

  it('is compiled from the published v0.6 sources', () => {
    const compiled = fluxArtifacts()
    expect(compiled.FluxAggregator?.sourceName).toBe(
      '@chainlink/contracts-0.8.0/src/v0.6/FluxAggregator.sol',
    )
    expect(compiled.FluxAggregator?.bytecode).toMatch(/^0x[0-9a-f]{10000,}$/)
  }, 120_000)

  it('deploys, is funded, takes three oracles and refuses a fourth it cannot pay for', async () => {
    const signer = new Wallet(ANVIL_PRIVATE_KEYS[0], provider)
    const deployment = await deployAggregator(signer, {
      paymentAmount: 10n ** 17n,
      timeout: 600,
      decimals: 2,
      description: 'floor price',
      fund: 6n * 10n ** 17n,
    })
    aggregator = deployment.aggregator
    expect(deployment.linkDeployed).toBe(true)
    const added = await addOracles(signer, aggregator, oracles, { minSubmissions: 2 })
    expect(added.oracles).toEqual(oracles)
    const state = await readAggregator(provider, aggregator)
    expect(state.availableFunds).toBe(6n * 10n ** 17n)
    expect(state.minSubmissionCount).toBe(2)
    expect(state.maxSubmissionCount).toBe(3)
    expect(state.oracles.map((oracle) => oracle.admin)).toEqual(oracles.map(() => signer.address))
    expect(state.latest.roundId).toBe(0n)

    const fourth = new Wallet(ANVIL_PRIVATE_KEYS[4]!).address
    await expect(
      addOracles(signer, aggregator, [...oracles, fourth], { minSubmissions: 2 }),
    ).rejects.toMatchObject({ kind: 'bad_input', message: expect.stringMatching(/fund it first/) })
  }, 120_000)

  it('accepts submissions: the median of two is the answer, each oracle is paid', async () => {
    const submit = async (index: number, round: number, value: bigint) => {
      const oracle = new Wallet(ANVIL_PRIVATE_KEYS[index]!, provider)
      const contract = new Contract(aggregator, fluxAggregatorInterface, oracle)
      const tx = await contract.getFunction('submit')(round, value)
      return tx.wait()
    }
    const before = await readOracleRoundState(provider, aggregator, oracles[0]!)
    expect(before).toMatchObject({ eligibleToSubmit: true, roundId: 1, oracleCount: 3 })
    const first = await submit(1, 1, 1000n)
    expect(first.logs.map((log: { topics: string[] }) => log.topics[0])).toContain(
      FLUX_TOPICS.newRound,
    )
    // Twice in one round: the contract refuses it.
    await expect(submit(1, 1, 1000n)).rejects.toThrow(/cannot report on previous rounds/)
    await submit(2, 1, 1100n)
    const state = await readAggregator(provider, aggregator)
    expect(state.latest.roundId).toBe(1n)
    expect(state.latest.answer).toBe(1050n)
    expect(state.oracles[0]!.withdrawable).toBe(10n ** 17n)
    expect(state.oracles[2]!.withdrawable).toBe(0n)

    const admin = owner()
    const withdrawn = await withdrawOraclePayment(admin, aggregator, oracles[0]!)
    expect(withdrawn.amount).toBe(10n ** 17n)
    expect((await readAggregator(provider, aggregator)).oracles[0]!.withdrawable).toBe(0n)
    await expect(
      withdrawOraclePayment(new Wallet(ANVIL_PRIVATE_KEYS[5]!, provider), aggregator, oracles[1]!),
    ).rejects.toMatchObject({ kind: 'not_authorised' })
  }, 120_000)
})
