import { JsonRpcProvider } from 'ethers'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { TxSender } from '../../src/chain/sender/index.ts'
import { startAnvil, type Anvil } from '../../src/dev/anvil.ts'
import { senderChainAccess } from '../../src/runner/sender-chain-access.ts'
import { runTask, taskFailure } from '../pipeline/support/task.ts'

// Runtime code that reverts at once (PUSH1 0, PUSH1 0, REVERT), and one that returns a word.
const REVERTS = '0x60006000fd'
const ANSWERS = '0x602a60005260206000f3'

/**
 * An ethcall task through the runner's chain access to a real node: a call the contract reverts is
 * final (kind `reverted`), as ethers classifies the node's answer; the task never reads its words.
 */
describe('ethcall against anvil', () => {
  let anvil: Anvil
  let provider: JsonRpcProvider
  const reverting = '0x00000000000000000000000000000000000000a1'
  const answering = '0x00000000000000000000000000000000000000a2'

  beforeAll(async () => {
    anvil = await startAnvil()
    provider = new JsonRpcProvider(anvil.rpcUrl, undefined, { staticNetwork: true })
    await provider.send('anvil_setCode', [reverting, REVERTS])
    await provider.send('anvil_setCode', [answering, ANSWERS])
  })
  afterAll(async () => {
    provider?.destroy()
    await anvil?.stop()
  })

  // The call reads nothing of the sender: only its sendTransaction does.
  const access = () => senderChainAccess({} as TxSender, provider, undefined)

  it('a call the contract reverts is a revert, not tried again', async () => {
    const failure = await taskFailure(
      runTask('ethcall', { contract: reverting, data: '0x12' }, { context: { chain: access() } }),
    )
    expect([failure.kind, failure.retryable]).toEqual(['reverted', false])
    expect(failure.message).toContain(`eth_call to ${reverting} failed`)
  })

  it('a call that answers gives its bytes', async () => {
    const value = await runTask(
      'ethcall',
      { contract: answering, data: '0x12' },
      { context: { chain: access() } },
    )
    expect(value).toBe(`0x${'0'.repeat(62)}2a`)
  })
})
