import { afterEach, describe, expect, it } from 'vitest'
import { Wallet } from 'ethers'
import { ANVIL_PRIVATE_KEYS, startAnvil, type Anvil } from '../../src/dev/anvil.ts'

async function rpc<T>(anvil: Anvil, method: string, params: unknown[] = []): Promise<T> {
  const response = await fetch(anvil.rpcUrl, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }) })
  const body = (await response.json()) as { result?: T; error?: { message: string } }
  if (body.error) throw new Error(`${method}: ${body.error.message}`)
  return body.result as T
}

const blockNumber = async (anvil: Anvil) => Number(await rpc<string>(anvil, 'eth_blockNumber'))

describe('the dev chain (startAnvil)', () => {
  let anvil: Anvil | undefined
  afterEach(async () => {
    await anvil?.stop()
    anvil = undefined
  })

  it('with a backstop, still mines a transaction at once and also mines a block a second while idle', async () => {
    anvil = await startAnvil({ backstopBlockSeconds: 1 })
    const wallet = new Wallet(ANVIL_PRIVATE_KEYS[1] as string)
    const raw = await wallet.signTransaction({ type: 2, chainId: anvil.chainId, nonce: 0, to: wallet.address, value: 0n, gasLimit: 21_000, maxFeePerGas: 10n ** 10n, maxPriorityFeePerGas: 10n ** 9n })
    const hash = await rpc<string>(anvil, 'eth_sendRawTransaction', [raw])
    // Automine: the answer to eth_sendRawTransaction comes once the transaction is in a block.
    const receipt = await rpc<{ status: string } | null>(anvil, 'eth_getTransactionReceipt', [hash])
    expect(receipt?.status).toBe('0x1')
    const before = await blockNumber(anvil)
    await new Promise((resolve) => setTimeout(resolve, 2_500))
    expect(await blockNumber(anvil)).toBeGreaterThanOrEqual(before + 2)
  })

  it('without a backstop mines nothing while idle (the tests count on it), and keeps the recent states', async () => {
    anvil = await startAnvil()
    const before = await blockNumber(anvil)
    await new Promise((resolve) => setTimeout(resolve, 1_500))
    expect(await blockNumber(anvil)).toBe(before)
    await rpc(anvil, 'anvil_mine', ['0x20'])
    const balanceThen = await rpc<string>(anvil, 'eth_getBalance', [new Wallet(ANVIL_PRIVATE_KEYS[1] as string).address, '0x1'])
    expect(BigInt(balanceThen)).toBeGreaterThan(0n)
  })
})
