import { ContractFactory, JsonRpcProvider, Network, NonceManager, Wallet } from 'ethers'
import { expect } from 'vitest'
import { artifact, type ArtifactSet } from '../../../src/chain/artifacts.ts'
import { ERC1820_REGISTRY } from '../../../src/feeds/server/blockchain/token-standards.ts'
import { startAnvil, ANVIL_PRIVATE_KEYS, type Anvil } from '../../../src/dev/anvil.ts'
import { FeedServiceError } from '../../../src/feeds/server/errors.ts'

/** anvil with an ethers provider (no call cache) and its first account behind a nonce manager. */
export interface TestChain {
  anvil: Anvil
  provider: JsonRpcProvider
  signer: NonceManager
  address: string
  stop(): Promise<void>
}

export async function startTestChain(
  options: Parameters<typeof startAnvil>[0] = {},
): Promise<TestChain> {
  const anvil = await startAnvil(options)
  const network = Network.from(anvil.chainId)
  const provider = new JsonRpcProvider(anvil.rpcUrl, network, {
    staticNetwork: network,
    cacheTimeout: -1,
    pollingInterval: 50,
  })
  const wallet = new Wallet(ANVIL_PRIVATE_KEYS[0], provider)
  return {
    anvil,
    provider,
    signer: new NonceManager(wallet),
    address: wallet.address,
    async stop() {
      provider.destroy()
      await anvil.stop()
    },
  }
}

/** The FeedServiceError a call rejects with (fails the test when it resolves or throws another error). */
export async function feedError(call: Promise<unknown>): Promise<FeedServiceError> {
  const error = await call.then(
    (value) => {
      throw new Error(`expected a FeedServiceError, got ${JSON.stringify(value)}`)
    },
    (rejected: unknown) => rejected,
  )
  expect(error).toBeInstanceOf(FeedServiceError)
  return error as FeedServiceError
}

/**
 * Puts an ERC1820 registry (contracts/test/TestERC1820Registry.sol) at the canonical EIP-1820
 * address of the dev chain: deployed normally, then its runtime code copied with anvil_setCode.
 */
export async function installErc1820Registry(
  chain: TestChain,
  artifacts: ArtifactSet,
): Promise<void> {
  const { abi, bytecode } = artifact(artifacts, 'TestERC1820Registry')
  const deployed = await new ContractFactory(abi as never[], bytecode, chain.signer).deploy()
  await deployed.waitForDeployment()
  const code = await chain.provider.getCode(await deployed.getAddress())
  await chain.provider.send('anvil_setCode', [ERC1820_REGISTRY, code])
}
