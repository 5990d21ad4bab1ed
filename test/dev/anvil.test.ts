import { afterEach, describe, expect, it } from 'vitest'
import { startAnvil, type Anvil } from '../../src/dev/anvil.ts'

/** EIP-2935's history contract: from Prague on, each block stores its parent's hash there. */
const HISTORY_CONTRACT = '0x0000F90827F1C53a10cb7A02335B175320002935'
const ZERO_WORD = `0x${'0'.repeat(64)}`

async function rpc<T>(anvil: Anvil, method: string, params: unknown[] = []): Promise<T> {
  const response = await fetch(anvil.rpcUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
  })
  return ((await response.json()) as { result: T }).result
}

/** The history contract's slot for block 1's hash, after a few blocks. */
async function storedParentHash(anvil: Anvil): Promise<string> {
  for (let i = 0; i < 3; i++) await rpc(anvil, 'evm_mine')
  return rpc<string>(anvil, 'eth_getStorageAt', [HISTORY_CONTRACT, '0x1', 'latest'])
}

describe('the dev chain', () => {
  let anvil: Anvil | undefined
  afterEach(async () => {
    await anvil?.stop()
    anvil = undefined
  })

  it('runs without the EIP-2935 block-hash history, whose storage makes each anvil block dearer than the last', async () => {
    anvil = await startAnvil()
    expect(await storedParentHash(anvil)).toBe(ZERO_WORD)
  })

  it('keeps a hardfork given in extraArgs (the bench passes its own)', async () => {
    anvil = await startAnvil({ extraArgs: ['--hardfork', 'prague'] })
    const stored = await storedParentHash(anvil)
    const block1 = await rpc<{ hash: string }>(anvil, 'eth_getBlockByNumber', ['0x1', false])
    expect(stored).toBe(block1.hash)
  })
})
