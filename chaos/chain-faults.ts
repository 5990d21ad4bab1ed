import { keccak256 } from 'ethers'
import { rpc, rpcBatch } from './rpc.ts'

interface BlockWithHashes {
  number: string
  transactions: string[]
}

/** What a reorg did, for the report. */
export interface ReorgOutcome {
  depth: number
  /** The first block it replaced (the head's successor when it replaced none). */
  fromBlock: number
  /** Transactions in the blocks taken away. */
  removed: number
  /** Of them, the ones mined again in the new blocks or put back in the pool. */
  back: number
  /** The hashes of the ones the chain no longer has in any form (their nonces are free again). */
  gone: string[]
}

/**
 * What becomes of the transactions of the blocks taken away: mined again in the new blocks, later
 * where the range allows (their logs move to another block and hash); put back in the pool, as
 * geth does with an abandoned fork's transactions (mined in a later block); or dropped, as by a node
 * that never sees them again (anvil's own way).
 */
export type ReorgTxs = 'reinclude' | 'reinject' | 'drop'

/**
 * Replaces the last `depth` blocks with new ones (anvil_reorg). Mining pauses meanwhile so the blocks
 * read are the blocks replaced.
 */
export async function reorg(
  anvilUrl: string,
  depth: number,
  txs: ReorgTxs,
  blockTimeSeconds: number,
): Promise<ReorgOutcome> {
  await rpc(anvilUrl, 'evm_setAutomine', [false])
  await rpc(anvilUrl, 'evm_setIntervalMining', [0])
  try {
    const head = Number(await rpc<string>(anvilUrl, 'eth_blockNumber'))
    const taken = Math.min(depth, head - 1)
    if (taken < 1) return { depth: 0, fromBlock: head + 1, removed: 0, back: 0, gone: [] }
    const numbers = Array.from({ length: taken }, (_, index) => head - taken + 1 + index)
    const blocks = await results<BlockWithHashes>(
      anvilUrl,
      numbers.map((number) => ['eth_getBlockByNumber', [`0x${number.toString(16)}`, false]]),
    )
    // Moved as far up as the range allows, block for block: two blocks never merge, so a request and
    // its answer keep their order.
    const lastUsed = blocks.findLastIndex((block) => block.transactions.length > 0)
    const shift = taken - 1 - lastUsed
    const placed: Array<[string, number]> = []
    for (const [offset, block] of blocks.entries()) {
      const raws = await results<string>(
        anvilUrl,
        block.transactions.map((hash) => ['eth_getRawTransactionByHash', [hash]]),
      )
      for (const raw of raws) placed.push([raw, offset + shift])
    }
    await rpc(anvilUrl, 'anvil_reorg', [taken, txs === 'reinclude' ? placed : []])
    // Back in the pool in their order; one the node refuses (its nonce taken meanwhile) stays out.
    if (txs === 'reinject')
      await rpcBatch(
        anvilUrl,
        placed.map(([raw]) => ['eth_sendRawTransaction', [raw]] as const),
      )
    const gone = await notOnNode(anvilUrl, placed)
    return {
      depth: taken,
      fromBlock: head - taken + 1,
      removed: placed.length,
      back: placed.length - gone.length,
      gone,
    }
  } finally {
    await resumeMining(anvilUrl, blockTimeSeconds)
  }
}

/** A block every `blockTimeSeconds`, or a block per transaction (automine) for 0. */
export async function resumeMining(anvilUrl: string, blockTimeSeconds: number): Promise<void> {
  if (blockTimeSeconds === 0) {
    await rpc(anvilUrl, 'evm_setAutomine', [true])
  } else {
    await rpc(anvilUrl, 'evm_setAutomine', [false])
    await rpc(anvilUrl, 'evm_setIntervalMining', [blockTimeSeconds])
  }
}

/** The hashes of the raw transactions the node no longer has, mined or in its pool. */
async function notOnNode(
  anvilUrl: string,
  placed: ReadonlyArray<readonly [string, number]>,
): Promise<string[]> {
  const hashes = placed.map(([raw]) => keccak256(raw).toLowerCase())
  const outcomes = await rpcBatch(
    anvilUrl,
    hashes.map((hash) => ['eth_getTransactionByHash', [hash]] as const),
  )
  return hashes.filter((_, index) => {
    const outcome = outcomes[index]
    return !(outcome?.ok && outcome.result !== null)
  })
}

/** Moves the chain's clock `seconds` ahead and mines a block at the new time. */
export async function warp(anvilUrl: string, seconds: number): Promise<void> {
  await rpc(anvilUrl, 'evm_increaseTime', [seconds])
  await rpc(anvilUrl, 'evm_mine', [])
}

async function results<T>(
  anvilUrl: string,
  calls: ReadonlyArray<readonly [string, readonly unknown[]]>,
): Promise<T[]> {
  const outcomes = await rpcBatch(anvilUrl, calls)
  return outcomes.map((outcome) => {
    if (!outcome.ok) throw new Error(outcome.message)
    return outcome.result as T
  })
}
