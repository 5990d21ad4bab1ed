import { JsonRpcProvider, Wallet } from 'ethers'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ANVIL_PRIVATE_KEYS, startAnvil, type Anvil } from '../../src/dev/anvil.ts'
import { waitForNonce } from '../../src/dev/requests.ts'

/**
 * A burst whose tail the node dropped (anvil under load has done so): waiting for the sender's nonce
 * sends what is not mined again once the count stands still, instead of waiting for its bound.
 */
describe('waiting for a burst to be mined', () => {
  let anvil: Anvil
  let provider: JsonRpcProvider
  beforeAll(async () => {
    anvil = await startAnvil()
    provider = new JsonRpcProvider(anvil.rpcUrl, undefined, { staticNetwork: true })
  })
  afterAll(async () => {
    provider?.destroy()
    await anvil?.stop()
  })

  it('sends the dropped tail again when the mined count stands still', async () => {
    const wallet = new Wallet(ANVIL_PRIVATE_KEYS[3]!, provider)
    const first = await provider.getTransactionCount(wallet.address)
    const network = await provider.getNetwork()
    const signed = await Promise.all(
      Array.from({ length: 6 }, (_, index) =>
        wallet.signTransaction({
          to: wallet.address,
          value: 1n,
          nonce: first + index,
          gasLimit: 21_000n,
          maxFeePerGas: 10n ** 10n,
          maxPriorityFeePerGas: 1n,
          chainId: network.chainId,
          type: 2,
        }),
      ),
    )
    // Only the head reaches the node: the tail is "dropped".
    for (const raw of signed.slice(0, 2)) await provider.send('eth_sendRawTransaction', [raw])
    const resentFrom: number[] = []
    await waitForNonce(provider, wallet.address, first + 6, {
      stallMs: 200,
      timeoutMs: 60_000,
      resend: async (mined) => {
        resentFrom.push(mined)
        for (const raw of signed.slice(mined - first))
          await provider.send('eth_sendRawTransaction', [raw]).catch(() => undefined)
      },
    })
    expect(resentFrom).toEqual([first + 2])
    expect(await provider.getTransactionCount(wallet.address)).toBe(first + 6)
  })
})
