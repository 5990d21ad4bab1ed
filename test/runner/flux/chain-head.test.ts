import { JsonRpcProvider } from 'ethers'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startAnvil, type Anvil } from '../../../src/dev/anvil.ts'
import { extendsHead, latestHead } from '../../../src/runner/flux/chain-head.ts'
import { rpc } from '../../../chaos/rpc.ts'

// The flux monitor keeps what it read of each aggregator as of the last head it looked at, and
// drops it all when the next head is not on that head's chain: a reorg replaced what it read. On
// anvil, whose anvil_reorg replaces the last blocks with new ones.

describe('whether a head extends the last one the flux monitor looked at', () => {
  let anvil: Anvil
  let provider: JsonRpcProvider

  beforeAll(async () => {
    anvil = await startAnvil()
    provider = new JsonRpcProvider(anvil.rpcUrl, anvil.chainId, {
      staticNetwork: true,
      cacheTimeout: -1,
    })
    await rpc(anvil.rpcUrl, 'anvil_mine', ['0x3'])
  }, 60_000)

  afterAll(async () => {
    provider?.destroy()
    await anvil?.stop()
  })

  const mine = (blocks: number) => rpc(anvil.rpcUrl, 'anvil_mine', [`0x${blocks.toString(16)}`])

  it('the same head, its child, and a later head of the same chain do', async () => {
    const last = await latestHead(provider)
    expect(await extendsHead(provider, last, last)).toBe(true)
    await mine(1)
    const child = await latestHead(provider)
    expect(await extendsHead(provider, last, child)).toBe(true)
    await mine(3)
    expect(await extendsHead(provider, last, await latestHead(provider))).toBe(true)
  })

  it('a head of the same height, a child or a later head after a reorg do not; nor a lower head', async () => {
    await mine(2)
    const last = await latestHead(provider)
    await rpc(anvil.rpcUrl, 'anvil_reorg', [2, []])
    const replaced = await latestHead(provider)
    expect(replaced.number).toBe(last.number)
    expect(await extendsHead(provider, last, replaced)).toBe(false)
    await mine(1)
    expect(await extendsHead(provider, last, await latestHead(provider))).toBe(false)
    // Heads skipped: the block at the last head's height is read, and is another block now.
    await mine(3)
    expect(await extendsHead(provider, last, await latestHead(provider))).toBe(false)
    const lower = { ...last, number: last.number - 1 }
    expect(await extendsHead(provider, last, lower)).toBe(false)
  })
})
