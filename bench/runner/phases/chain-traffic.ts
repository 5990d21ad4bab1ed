/**
 * Other people's transactions on the block-time chain: a real chain's blocks are never empty, and
 * their logs fill the blocks' blooms. One ERC-20 approval a block (LinkToken's `Approval` log, from a
 * key of its own, to a new spender each time), so the runner's
 * idle reads are measured on blocks that hold logs, none of them its Operators'.
 */
import { Interface, Wallet, hexlify, randomBytes } from 'ethers'
import type { Chain } from '../load.ts'
import { rpc } from '../measure.ts'

const approve = new Interface(['function approve(address spender, uint256 value) returns (bool)'])

export interface ChainTraffic {
  /** Transactions sent so far. */
  readonly sent: number
  stop(): Promise<void>
}

/** Sends one approval at each new block until stopped; a failed send is reported once and ends it. */
export async function startChainTraffic(chain: Chain): Promise<ChainTraffic> {
  const url = chain.anvil.rpcUrl
  // A key of its own, funded by anvil: no nonce shared with the bench's requests or the runner.
  const wallet = new Wallet(hexlify(randomBytes(32)))
  await rpc(url, 'anvil_setBalance', [wallet.address, '0x56bc75e2d63100000'])
  let nonce = Number(await rpc<string>(url, 'eth_getTransactionCount', [wallet.address, 'pending']))
  const gasPrice = BigInt(await rpc<string>(url, 'eth_gasPrice')) * 2n
  let sent = 0
  let running = true
  let lastBlock = Number(await rpc<string>(url, 'eth_blockNumber'))

  async function sendOne(): Promise<void> {
    const raw = await wallet.signTransaction({
      chainId: chain.dev.chainId,
      nonce: nonce++,
      to: chain.dev.addresses.linkToken,
      data: approve.encodeFunctionData('approve', [hexlify(randomBytes(20)), 1n]),
      gasLimit: 60_000,
      gasPrice,
    })
    await rpc<string>(url, 'eth_sendRawTransaction', [raw])
    sent += 1
  }

  const loop = (async () => {
    while (running) {
      const block = Number(await rpc<string>(url, 'eth_blockNumber'))
      if (block > lastBlock) {
        lastBlock = block
        await sendOne()
      }
      await new Promise((resolveLater) => setTimeout(resolveLater, 100))
    }
  })().catch((error: unknown) => {
    running = false
    console.error(`chain traffic stopped: ${error instanceof Error ? error.message : error}`)
  })
  await sendOne()

  return {
    get sent() {
      return sent
    },
    async stop() {
      running = false
      await loop
    },
  }
}
