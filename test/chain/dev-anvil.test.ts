import { afterEach, describe, expect, it } from 'vitest'
import { Wallet } from 'ethers'
import { ANVIL_PRIVATE_KEYS, startAnvil, type Anvil } from '../../src/dev/anvil.ts'
import { deployDevContracts } from '../../src/dev/deploy.ts'
import { startPoolBackstop, type PoolBackstop } from '../../src/dev/pool-backstop.ts'
import {
  sendRawInNonceOrder,
  signConsumerRequests,
  type ConsumerRequest,
} from '../../src/dev/requests.ts'

async function rpc<T>(anvil: Anvil, method: string, params: unknown[] = []): Promise<T> {
  const response = await fetch(anvil.rpcUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
  })
  const body = (await response.json()) as { result?: T; error?: { message: string } }
  if (body.error) throw new Error(`${method}: ${body.error.message}`)
  return body.result as T
}

/** EIP-2935's history contract: from Prague on, each block stores its parent's hash there. */
const HISTORY_CONTRACT = '0x0000F90827F1C53a10cb7A02335B175320002935'
const ZERO_WORD = `0x${'0'.repeat(64)}`

/** The history contract's slot for block 1's hash, after a few blocks. */
async function storedHashOfBlock1(anvil: Anvil): Promise<string> {
  await rpc(anvil, 'anvil_mine', ['0x3'])
  return rpc<string>(anvil, 'eth_getStorageAt', [HISTORY_CONTRACT, '0x1', 'latest'])
}

const pending = async (anvil: Anvil) =>
  Number((await rpc<{ pending: string }>(anvil, 'txpool_status')).pending)
/** Everything anvil holds unmined, ready or queued behind a nonce it thinks is missing. */
const pooled = async (anvil: Anvil) => {
  const status = await rpc<{ pending: string; queued: string }>(anvil, 'txpool_status')
  return Number(status.pending) + Number(status.queued)
}
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

describe('the dev chain: anvil and its pool backstop', () => {
  let anvil: Anvil | undefined
  let backstop: PoolBackstop | undefined
  afterEach(async () => {
    backstop?.stop()
    await anvil?.stop()
    anvil = undefined
    backstop = undefined
  })

  it('runs without the EIP-2935 block-hash history, whose storage made each anvil block dearer than the last', async () => {
    anvil = await startAnvil()
    expect(await storedHashOfBlock1(anvil)).toBe(ZERO_WORD)
  })

  it('keeps a hardfork given in extraArgs (the bench passes its own)', async () => {
    anvil = await startAnvil({ extraArgs: ['--hardfork', 'prague'] })
    const stored = await storedHashOfBlock1(anvil)
    expect(stored).toBe(
      (await rpc<{ hash: string }>(anvil, 'eth_getBlockByNumber', ['0x1', false])).hash,
    )
  })

  it('keeps the recent states for past-block reads (revert replays)', async () => {
    anvil = await startAnvil()
    await rpc(anvil, 'anvil_mine', ['0x20'])
    const balanceThen = await rpc<string>(anvil, 'eth_getBalance', [
      new Wallet(ANVIL_PRIVATE_KEYS[1] as string).address,
      '0x1',
    ])
    expect(BigInt(balanceThen)).toBeGreaterThan(0n)
  })

  it('leaves the pool of a chain driven by hand (automine off) alone', async () => {
    anvil = await startAnvil()
    backstop = startPoolBackstop(anvil.rpcUrl, { idleMs: 100, checkEveryMs: 50 })
    await rpc(anvil, 'evm_setAutomine', [false])
    const wallet = new Wallet(ANVIL_PRIVATE_KEYS[1] as string)
    const raw = await wallet.signTransaction({
      type: 2,
      chainId: anvil.chainId,
      nonce: 0,
      to: wallet.address,
      value: 0n,
      gasLimit: 21_000,
      maxFeePerGas: 10n ** 10n,
      maxPriorityFeePerGas: 10n ** 9n,
    })
    await rpc(anvil, 'eth_sendRawTransaction', [raw])
    await sleep(600)
    expect(await pending(anvil)).toBe(1)
    expect(backstop.flushes).toBe(0)
  })

  it("sends again a transaction anvil holds as queued although its nonce is its sender's next, and leaves a real gap alone", async () => {
    anvil = await startAnvil()
    const [stuck, gapped] = [
      new Wallet(ANVIL_PRIVATE_KEYS[1] as string),
      new Wallet(ANVIL_PRIVATE_KEYS[3] as string),
    ]
    const transfer = (wallet: Wallet, nonce: number) =>
      wallet.signTransaction({
        type: 2,
        chainId: anvil!.chainId,
        nonce,
        to: wallet.address,
        value: 0n,
        gasLimit: 21_000,
        maxFeePerGas: 10n ** 10n,
        maxPriorityFeePerGas: 10n ** 9n,
      })
    // Nonce 1 while the account is at 0: queued. Moving the account to 1 leaves it queued, and mining does not take it.
    const hash = await rpc<string>(anvil, 'eth_sendRawTransaction', [await transfer(stuck, 1)])
    await rpc(anvil, 'anvil_setNonce', [stuck.address, '0x1'])
    await rpc(anvil, 'evm_mine')
    expect(await rpc(anvil, 'eth_getTransactionReceipt', [hash])).toBeNull()
    // A queued transaction behind a real gap (nonce 5 of an account at 0) must stay as it is.
    await rpc(anvil, 'eth_sendRawTransaction', [await transfer(gapped, 5)])

    backstop = startPoolBackstop(anvil.rpcUrl, { idleMs: 100, checkEveryMs: 50 })
    const deadline = Date.now() + 60_000 // a hang catcher: the backstop re-sends it within ~100 ms
    while (
      (await rpc(anvil, 'eth_getTransactionReceipt', [hash])) === null &&
      Date.now() < deadline
    )
      await sleep(100)
    expect(
      await rpc<{ status: string } | null>(anvil, 'eth_getTransactionReceipt', [hash]),
    ).toMatchObject({ status: '0x1' })
    expect(backstop.resent).toBe(1)
    expect(await rpc<{ queued: string }>(anvil, 'txpool_status')).toMatchObject({ queued: '0x1' })
  })

  it('a burst of 1,000 requests in JSON-RPC batches leaves nothing in the pool for long', async () => {
    anvil = await startAnvil()
    backstop = startPoolBackstop(anvil.rpcUrl)
    const dev = await deployDevContracts(anvil.rpcUrl, {
      nodeKeys: [ANVIL_PRIVATE_KEYS[1] as string],
    })
    try {
      const request: ConsumerRequest = {
        externalJobId: 'ca98366c-c731-4957-b8c0-12c72f05aeea',
        valueType: 'uint256',
        params: [['endpoint', 'game-odds']],
        payment: 10n ** 17n,
      }
      const signed = await signConsumerRequests(
        dev.consumer,
        dev.deployer,
        Array.from({ length: 1_000 }, () => request),
      )
      await sendRawInNonceOrder(anvil.rpcUrl, signed.raws, { window: 32 })
      // Without the backstop, anvil's automine left part of such a burst in its pool in 1 to 3 of 7 runs.
      // A condition, not a deadline: the pool empties as fast as anvil mines; the bound only catches a
      // transaction left behind for good.
      const minedCount = async () =>
        Number(
          await rpc<string>(anvil!, 'eth_getTransactionCount', [dev.deployer.address, 'latest']),
        )
      // The burst is one sender's consecutive nonces, so nothing may stay queued either: a
      // transaction anvil files as queued at its sender's next nonce is the backstop's to send again
      // (it looks once a second), and a wait on the ready count alone ended before it had looked.
      const drained = async () => {
        const deadline = Date.now() + 120_000
        while ((await pooled(anvil!)) > 0 && Date.now() < deadline) await sleep(100)
      }
      await drained()
      // anvil 1.7 now and then forgets part of a burst it had accepted (stop 12: the pool empty, the
      // rest unknown to the node; 1 burst in about 50). That is the node's loss, not the backstop's:
      // the forgotten tail is sent once more, and the pool must then be empty with every one mined.
      const lost = signed.firstNonce + 1_000 - (await minedCount())
      if (lost > 0) {
        console.log(`anvil forgot ${lost} of 1,000 accepted transactions: sending them again once`)
        await sendRawInNonceOrder(anvil.rpcUrl, signed.raws.slice(1_000 - lost), { window: 32 })
        await drained()
      }
      expect(await pooled(anvil)).toBe(0)
      expect(await minedCount()).toBe(signed.firstNonce + 1_000)
      // Sent again, what the chain has already is no failure (anvil: "transaction already imported",
      // or "nonce too low" once mined): a resend that meets part of the burst mined goes on.
      await sendRawInNonceOrder(anvil.rpcUrl, signed.raws.slice(-64), { window: 32 })
      expect(await minedCount()).toBe(signed.firstNonce + 1_000)
    } finally {
      dev.provider.destroy()
    }
  }, 300_000)
})
