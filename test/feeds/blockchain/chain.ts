import { JsonRpcProvider, Network, NonceManager, Wallet } from 'ethers'
import { expect } from 'vitest'
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

export async function startTestChain(options: Parameters<typeof startAnvil>[0] = {}): Promise<TestChain> {
  const anvil = await startAnvil(options)
  const network = Network.from(anvil.chainId)
  const provider = new JsonRpcProvider(anvil.rpcUrl, network, { staticNetwork: network, cacheTimeout: -1, pollingInterval: 50 })
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
