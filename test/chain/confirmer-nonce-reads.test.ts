import { Wallet } from 'ethers'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { Confirmer } from '../../src/chain/sender/confirmer.ts'
import type { Head, UnsignedTx } from '../../src/chain/sender/model.ts'
import { ANVIL_PRIVATE_KEYS, startAnvil, type Anvil } from '../../src/dev/anvil.ts'
import { startRpcProxy, type RpcProxy } from '../../src/dev/rpc-call-counter.ts'
import { rpc } from '../../chaos/rpc.ts'

/** A real anvil mining only when told, behind a proxy that counts what the confirmer asks it. */
describe('confirmer: the key nonce read once a head while a transaction is in flight', () => {
  let anvil: Anvil
  let counter: RpcProxy

  beforeAll(async () => {
    anvil = await startAnvil()
    counter = await startRpcProxy(anvil)
    await rpc(anvil.rpcUrl, 'evm_setAutomine', [false])
  })

  afterAll(async () => {
    await counter?.stop()
    await anvil?.stop()
  })

  async function head(): Promise<Head> {
    const block = await rpc<{
      number: string
      hash: string
      parentHash: string
      timestamp: string
    }>(anvil.rpcUrl, 'eth_getBlockByNumber', ['latest', false])
    const { number, hash, parentHash, timestamp } = block
    return { number: Number(number), hash, parentHash, baseFee: null, timestamp: Number(timestamp) }
  }

  it('looks at one head twice with one nonce read, and reads again at the next head', async () => {
    const wallet = new Wallet(ANVIL_PRIVATE_KEYS[1])
    const tx: UnsignedTx = { to: wallet.address, data: '0x', gasLimit: 21_000, value: 0n }
    const fees = { maxFeePerGas: (10n ** 10n).toString(), maxPriorityFeePerGas: '1000000000' }
    const raw = await wallet.signTransaction({
      type: 2,
      chainId: anvil.chainId,
      nonce: 0,
      to: tx.to,
      gasLimit: tx.gasLimit,
      ...fees,
    })
    const hash = await rpc<string>(anvil.rpcUrl, 'eth_sendRawTransaction', [raw])
    const idle = async () => undefined
    const confirmer = new Confirmer(
      wallet.address,
      {
        send: (method, params) => rpc(counter.httpUrl, method, params),
        head: undefined,
        secondsPerBlock: () => 0,
      },
      { confirmations: 1, bumpAfterBlocks: 3, resendAfterMs: 60_000, finalityDepth: 50 },
      { bump: idle, fillHoles: idle, resend: idle, final: idle, reorgedOut: idle },
    )
    const fulfilled = confirmer.track(0, 'job-1', tx, [{ hash, raw, ...fees }])
    const reads = () => counter.snapshot().calls.eth_getTransactionCount ?? 0

    const before = await head()
    await confirmer.check(before)
    await confirmer.check(before)
    expect(reads()).toBe(1)
    expect(confirmer.pending.size).toBe(1)

    await rpc(anvil.rpcUrl, 'evm_mine')
    await confirmer.check(await head())
    expect(reads()).toBe(2)
    expect((await fulfilled).receipt?.transactionHash).toBe(hash)
    expect(counter.snapshot().calls.eth_getTransactionReceipt).toBe(1)
  })
})
