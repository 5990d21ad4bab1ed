import { JsonRpcProvider, Wallet } from 'ethers'
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest'
import { ANVIL_PRIVATE_KEYS, startAnvil, type Anvil } from '../../src/dev/anvil.ts'
import { deployDevContracts } from '../../src/dev/deploy.ts'
import { signConsumerRequests, waitForNonce, waitForSigned } from '../../src/dev/requests.ts'
import { requestsOfTransactions } from '../../src/dev/requests-mined.ts'

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

  it('sends again the request transactions the node lost from its pool, when the mined nonce stands still', async () => {
    const dev = await deployDevContracts(anvil.rpcUrl)
    onTestFinished(() => dev.provider.destroy())
    const request = {
      externalJobId: '0eec7e1d-d0d2-476c-a1a8-72dfb6633f47',
      valueType: 'uint256' as const,
      params: [['path', '$.data.value']] as const,
      payment: 0n,
    }
    const signed = await signConsumerRequests(dev.consumer, dev.deployer, [
      request,
      request,
      request,
    ])
    const fromBlock = (await provider.getBlockNumber()) + 1
    // Accepted, then lost: the pool drops them, as a loaded anvil has.
    await provider.send('evm_setAutomine', [false])
    for (const raw of signed.raws) await provider.send('eth_sendRawTransaction', [raw])
    await provider.send('anvil_dropAllTransactions', [])
    await provider.send('evm_setAutomine', [true])
    const sentAt = signed.raws.map(() => Date.now())

    // Nothing else brings them back: reading the requests alone ends at its bound, naming one.
    await expect(
      requestsOfTransactions(dev.provider, dev.addresses.operator, signed.hashes, sentAt, {
        fromBlock,
        timeoutMs: 500,
      }),
    ).rejects.toThrow(/3 of 3 request transactions made no OracleRequest.*unknown to the node/)

    const resent: number[] = []
    await waitForSigned(provider, signed, {
      timeoutMs: 60_000,
      stallMs: 200,
      onResend: (count) => resent.push(count),
    })
    const sent = await requestsOfTransactions(
      dev.provider,
      dev.addresses.operator,
      signed.hashes,
      sentAt,
      { fromBlock, timeoutMs: 60_000 },
    )
    expect(resent).toEqual([3])
    expect(sent.map((item) => item.txHash.toLowerCase())).toEqual(
      signed.hashes.map((hash) => hash.toLowerCase()),
    )
    expect(new Set(sent.map((item) => item.requestId)).size).toBe(3)
  })
})
