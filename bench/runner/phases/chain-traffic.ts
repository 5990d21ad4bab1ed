/**
 * Other people's transactions on the block-time chain: a real chain's blocks are never empty, and
 * their logs fill the blocks' blooms. BENCH_BLOCKTIME_TRAFFIC ERC-20 approvals a block (LinkToken's
 * `Approval` log, each from a key of its own to a new spender: two new items in the bloom each), so
 * the runner's idle reads are measured on blocks that hold logs, none of them its Operators'. One a
 * block by default; a few hundred fill a bloom as a busy chain's full blocks do.
 */
import { Interface, Wallet, getBytes, hexlify, randomBytes } from 'ethers'
import { postJsonRpcBatch } from '../../../src/chain/sender/json-rpc-batch.ts'
import type { Chain } from '../load.ts'
import { rpc } from '../measure.ts'

const approve = new Interface(['function approve(address spender, uint256 value) returns (bool)'])

export interface ChainTraffic {
  /** Transactions sent so far. */
  readonly sent: number
  stop(): Promise<void>
}

/**
 * Sends `perBlock` approvals at each new block until stopped; a failed send is reported once and
 * ends it.
 */
export async function startChainTraffic(chain: Chain, perBlock: number): Promise<ChainTraffic> {
  const url = chain.anvil.rpcUrl
  // Keys of their own, funded by anvil: no nonce shared with the bench's requests or the runner.
  const wallets = Array.from({ length: perBlock }, () => new Wallet(hexlify(randomBytes(32))))
  const funded = await postJsonRpcBatch(
    url,
    wallets.map((wallet) => ['anvil_setBalance', [wallet.address, '0x56bc75e2d63100000']] as const),
  )
  if (funded.some((outcome) => !outcome.ok)) throw new Error('anvil_setBalance failed')
  let nonce = 0
  const gasPrice = BigInt(await rpc<string>(url, 'eth_gasPrice')) * 2n
  let sent = 0
  let running = true
  let lastBlock = Number(await rpc<string>(url, 'eth_blockNumber'))

  /** One approval from each key, as one batch. */
  async function sendRound(): Promise<void> {
    const raws = await Promise.all(
      wallets.map((wallet) =>
        wallet.signTransaction({
          chainId: chain.dev.chainId,
          nonce,
          to: chain.dev.addresses.linkToken,
          data: approve.encodeFunctionData('approve', [hexlify(randomBytes(20)), 1n]),
          gasLimit: 50_000,
          gasPrice,
        }),
      ),
    )
    nonce += 1
    const outcomes = await postJsonRpcBatch(
      url,
      raws.map((raw) => ['eth_sendRawTransaction', [raw]] as const),
    )
    const refused = outcomes.find((outcome) => !outcome.ok)
    if (refused && !refused.ok) throw new Error(`eth_sendRawTransaction: ${refused.message}`)
    sent += raws.length
  }

  const loop = (async () => {
    while (running) {
      const block = Number(await rpc<string>(url, 'eth_blockNumber'))
      if (block > lastBlock) {
        lastBlock = block
        await sendRound()
      }
      await new Promise((resolveLater) => setTimeout(resolveLater, 100))
    }
  })().catch((error: unknown) => {
    running = false
    console.error(`chain traffic stopped: ${error instanceof Error ? error.message : error}`)
  })
  await sendRound()

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

/** The mean share of logs-bloom bits set in blocks [from, to] (read from anvil, not the proxy). */
export async function meanBloomFill(chain: Chain, from: number, to: number): Promise<number> {
  const blocks = await postJsonRpcBatch(
    chain.anvil.rpcUrl,
    Array.from(
      { length: Math.max(0, to - from + 1) },
      (_, at) => ['eth_getBlockByNumber', [`0x${(from + at).toString(16)}`, false]] as const,
    ),
  )
  const fills = blocks.flatMap((outcome) => {
    const bloom = outcome.ok
      ? (outcome.result as { logsBloom?: string } | null)?.logsBloom
      : undefined
    if (!bloom) return []
    let bits = 0
    for (const byte of getBytes(bloom)) for (let bit = byte; bit > 0; bit >>= 1) bits += bit & 1
    return [bits / 2048]
  })
  return fills.length === 0 ? 0 : fills.reduce((sum, fill) => sum + fill, 0) / fills.length
}
