import { Wallet } from 'ethers'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { Confirmer } from '../../src/chain/sender/confirmer.ts'
import type { PendingTx } from '../../src/chain/sender/pending-tx.ts'
import type { Head, UnsignedTx } from '../../src/chain/sender/model.ts'
import { ANVIL_PRIVATE_KEYS, startAnvil, type Anvil } from '../../src/dev/anvil.ts'
import {
  callsBetween,
  startRpcProxy,
  type RpcCounts,
  type RpcProxy,
} from '../../src/dev/rpc-call-counter.ts'
import { rpc } from '../../chaos/rpc.ts'

/**
 * A real anvil mining only when told, behind a proxy that counts what the confirmer asks it: the
 * key's nonce count is read when only it can tell (the first look, a transaction that missed its
 * block), and a transaction mined in the block after it was sent costs its receipt read alone.
 */
describe('confirmer: receipts first, the key nonce count when only it tells', () => {
  let anvil: Anvil
  let counter: RpcProxy
  const fees = { maxFeePerGas: (10n ** 10n).toString(), maxPriorityFeePerGas: '1000000000' }

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

  /** A confirmer for `wallet` whose node sees `known.head` as the head a transaction is sent at. */
  function confirmerOf(wallet: Wallet, known: { head?: Head }): Confirmer {
    const idle = async () => undefined
    return new Confirmer(
      wallet.address,
      {
        send: (method, params) => rpc(counter.httpUrl, method, params),
        get head() {
          return known.head
        },
        secondsPerBlock: () => 0,
      },
      { confirmations: 1, bumpAfterBlocks: 3, resendAfterMs: 60_000, finalityDepth: 50 },
      { bump: idle, fillHoles: idle, resend: idle, final: idle, reorgedOut: idle },
    )
  }

  /** Signs and sends a transfer at `nonce` (to the node only: anvil mines it at the next evm_mine). */
  async function sendAt(wallet: Wallet, confirmer: Confirmer, nonce: number) {
    const tx: UnsignedTx = { to: wallet.address, data: '0x', gasLimit: 21_000, value: 0n }
    const raw = await wallet.signTransaction({
      type: 2,
      chainId: anvil.chainId,
      nonce,
      to: tx.to,
      gasLimit: tx.gasLimit,
      ...fees,
    })
    const hash = await rpc<string>(anvil.rpcUrl, 'eth_sendRawTransaction', [raw])
    return { hash, done: confirmer.track(nonce, `job-${nonce}`, tx, [{ hash, raw, ...fees }]) }
  }

  const since = (before: RpcCounts) => callsBetween(before, counter.snapshot())

  it('reads the count at the first look, then finds a transaction mined next block by its receipt alone', async () => {
    const wallet = new Wallet(ANVIL_PRIVATE_KEYS[1])
    const known: { head?: Head } = { head: await head() }
    const confirmer = confirmerOf(wallet, known)
    const first = await sendAt(wallet, confirmer, 0)

    // The first look knows nothing of the key: the count, once for two looks at one head.
    let before = counter.snapshot()
    await confirmer.check(known.head!)
    await confirmer.check(known.head!)
    expect(since(before)).toEqual({ eth_getTransactionCount: 1 })

    await rpc(anvil.rpcUrl, 'evm_mine')
    before = counter.snapshot()
    await confirmer.check(await head())
    expect(since(before)).toEqual({ eth_getTransactionReceipt: 1 })
    expect((await first.done).receipt?.transactionHash).toBe(first.hash)

    // Three sent at one head, all mined in the next block: three receipt reads, no count.
    known.head = await head()
    const three = [
      await sendAt(wallet, confirmer, 1),
      await sendAt(wallet, confirmer, 2),
      await sendAt(wallet, confirmer, 3),
    ]
    before = counter.snapshot()
    await confirmer.check(known.head)
    expect(since(before)).toEqual({})
    await rpc(anvil.rpcUrl, 'evm_mine')
    before = counter.snapshot()
    await confirmer.check(await head())
    expect(since(before)).toEqual({ eth_getTransactionReceipt: 3 })
    const mined: PendingTx[] = await Promise.all(three.map((sent) => sent.done))
    expect(mined.map((entry) => entry.receipt?.transactionHash)).toEqual(
      three.map((sent) => sent.hash),
    )
  })

  it('spends one read a block on transactions that missed their block, and reads the count once a bump may be due', async () => {
    const wallet = new Wallet(ANVIL_PRIVATE_KEYS[2])
    const known: { head?: Head } = { head: await head() }
    const confirmer = confirmerOf(wallet, known)
    const first = await sendAt(wallet, confirmer, 0)
    await confirmer.check(known.head!)
    await rpc(anvil.rpcUrl, 'evm_mine')
    await confirmer.check(await head())
    await first.done

    // Two sent at one head, and dropped from the node's pool before the next block.
    known.head = await head()
    const two = [await sendAt(wallet, confirmer, 1), await sendAt(wallet, confirmer, 2)]
    for (const sent of two) await rpc(anvil.rpcUrl, 'anvil_dropTransaction', [sent.hash])
    await rpc(anvil.rpcUrl, 'evm_mine')
    let before = counter.snapshot()
    await confirmer.check(await head())
    // The lowest is not mined, so neither is the one above it: one call.
    expect(since(before)).toEqual({ eth_getTransactionReceipt: 1 })

    await rpc(anvil.rpcUrl, 'evm_mine')
    before = counter.snapshot()
    await confirmer.check(await head())
    expect(since(before)).toEqual({ eth_getTransactionReceipt: 1 })

    await rpc(anvil.rpcUrl, 'evm_mine')
    before = counter.snapshot()
    await confirmer.check(await head())
    // Three blocks without them (bumpAfterBlocks): the count decides whether a bump is due, and
    // with nothing below it, no receipt is read.
    expect(since(before)).toEqual({ eth_getTransactionCount: 1 })
    expect(confirmer.pending.size).toBe(2)
  })
})
