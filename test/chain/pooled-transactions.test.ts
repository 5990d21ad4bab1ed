import { Wallet } from 'ethers'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { waitForPooledMined, type RpcSend } from '../../src/chain/pooled-transactions.ts'
import { ANVIL_PRIVATE_KEYS } from '../../src/dev/anvil.ts'
import { waitFor } from '../../src/dev/process.ts'
import { settlesWithin } from '../support/settles-within.ts'
import { rpc, startTestChain, type TestChain } from './support.ts'

/**
 * What a rebuild from the chain and a key's new owner wait for before they read it again: the
 * transactions the node's pool held of the keys, mined, or gone from the pool (a node that drops one
 * leaves the key's later ones unminable: waiting for them would take the whole bound, 120 s).
 */
describe('waiting for what the pool holds of a key', () => {
  let chain: TestChain
  const wallet = () => new Wallet(ANVIL_PRIVATE_KEYS[3]!, chain.dev.provider)
  const send: RpcSend = (method, params) => rpc(chain.dev.provider, method, params)
  const options = { boundMs: 120_000, pollIntervalMs: 50 }

  beforeAll(async () => {
    chain = await startTestChain()
  })
  afterAll(async () => {
    await chain?.stop()
  })

  /** Two transfers of the key waiting in the pool (automine off). */
  async function twoPooled(): Promise<string[]> {
    await rpc(chain.dev.provider, 'evm_setAutomine', [false])
    const signer = wallet()
    const nonce = await signer.getNonce('pending')
    const hashes: string[] = []
    for (const offset of [0, 1])
      hashes.push(
        (await signer.sendTransaction({ to: signer.address, value: 1n, nonce: nonce + offset }))
          .hash,
      )
    return hashes
  }

  it('ends once they are mined, not waiting for what was sent after it began', async () => {
    await twoPooled()
    let told = 0
    const waiting = waitForPooledMined(send, [wallet().address], {
      ...options,
      onWaiting: (count) => (told = count),
    })
    await waitFor('the wait begun', async () => told > 0, 60_000, 20)
    expect(told).toBe(2)
    await rpc(chain.dev.provider, 'evm_mine', [])
    // A third, sent after the wait began and never mined while it runs.
    await wallet().sendTransaction({ to: wallet().address, value: 1n })
    const ended = await settlesWithin(waiting, 60_000)
    expect(ended).toMatchObject({ mined: true })
    await rpc(chain.dev.provider, 'evm_mine', [])
    await rpc(chain.dev.provider, 'evm_setAutomine', [true])
  })

  it('ends once the node dropped them, rather than waiting out its bound', async () => {
    const [first, second] = await twoPooled()
    let told = 0
    const waiting = waitForPooledMined(send, [wallet().address], {
      ...options,
      onWaiting: (count) => (told = count),
    })
    await waitFor('the wait begun', async () => told > 0, 60_000, 20)
    await rpc(chain.dev.provider, 'anvil_dropTransaction', [first])
    await rpc(chain.dev.provider, 'anvil_dropTransaction', [second])
    expect(await settlesWithin(waiting, 60_000)).toMatchObject({ mined: true })
    await rpc(chain.dev.provider, 'evm_setAutomine', [true])
  })
})
