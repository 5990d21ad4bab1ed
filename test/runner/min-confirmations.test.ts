import { JsonRpcProvider, Wallet } from 'ethers'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { TxSender } from '../../src/chain/sender/index.ts'
import { ANVIL_PRIVATE_KEYS, startAnvil, type Anvil } from '../../src/dev/anvil.ts'
import { senderChainAccess } from '../../src/runner/sender-chain-access.ts'

// The ethtx task's minConfirmations: "minimum number of confirmations required before this task will
// continue" (Chainlink's task reference). The sender waits TX_CONFIRMATIONS; the task waits for its
// own depth on top, read from a real chain.

let anvil: Anvil
let provider: JsonRpcProvider
beforeAll(async () => {
  anvil = await startAnvil()
  provider = new JsonRpcProvider(anvil.rpcUrl, undefined, {
    staticNetwork: true,
    pollingInterval: 50,
  })
})
afterAll(async () => {
  provider?.destroy()
  await anvil?.stop()
})

/** A sender whose one transaction was really mined on the chain. */
async function minedSender(): Promise<{ sender: TxSender; blockNumber: number }> {
  const wallet = new Wallet(ANVIL_PRIVATE_KEYS[2], provider)
  const receipt = await (await wallet.sendTransaction({ to: wallet.address, value: 1n })).wait()
  const sender = {
    submit: async () => ({
      status: 'mined' as const,
      txHash: receipt!.hash,
      blockNumber: receipt!.blockNumber,
    }),
  } as unknown as TxSender
  return { sender, blockNumber: receipt!.blockNumber }
}

const REQUEST = {
  operator: `0x${'4'.repeat(40)}`,
  requestId: `0x${'5'.repeat(64)}`,
  blockNumber: 1,
}

describe('ethtx minConfirmations', () => {
  it('the task goes on only once its transaction is that deep', async () => {
    const { sender, blockNumber } = await minedSender()
    let headAtResolution = -1
    const sent = senderChainAccess(sender, provider, REQUEST)
      .sendTransaction({
        to: `0x${'3'.repeat(40)}`,
        data: '0x',
        idempotencyKey: 'k',
        minConfirmations: 3,
      })
      .then(async (outcome) => {
        headAtResolution = Number(await provider.send('eth_blockNumber', []))
        return outcome
      })
    // Blocks come only with transactions on anvil: two more make the transaction three deep.
    await provider.send('evm_mine', [])
    await provider.send('evm_mine', [])
    expect((await sent).status).toBe('confirmed')
    expect(headAtResolution - blockNumber + 1).toBeGreaterThanOrEqual(3)
  })

  it('without minConfirmations (or 1) it does not wait for more blocks', async () => {
    const { sender, blockNumber } = await minedSender()
    await senderChainAccess(sender, provider, REQUEST).sendTransaction({
      to: `0x${'3'.repeat(40)}`,
      data: '0x',
      idempotencyKey: 'k2',
      minConfirmations: 1,
    })
    expect(Number(await provider.send('eth_blockNumber', []))).toBe(blockNumber)
  })
})
