import { getAddress, ZeroAddress } from 'ethers'
import { Decimal } from '../../reduce/index.ts'
import { TaskError, type TaskDefinition } from '../task.ts'
import { blockTag, checkChainId } from './chain-params.ts'
import { bytesParam, decimalOf, describe, hexOf } from './convert.ts'

/** The fulfilment gas limit when the spec sets none: the sender's default. */
export const DEFAULT_GAS_LIMIT = 500_000n

/**
 * estimategaslimit(to, data, from, multiplier, evmChainID, block): eth_estimateGas times
 * `multiplier` (default 1), truncated, at most the job's gas limit (gasLimit, else 500,000). As on a
 * Chainlink node, an estimate the node cannot give is not a failure: the task answers that maximum.
 */
export const estimategaslimit: TaskDefinition = {
  type: 'estimategaslimit',
  // It reaches the network or the chain: it runs in the pipeline's own thread.
  runsIn: 'main',
  attributes: ['to', 'data', 'from', 'multiplier', 'evmChainID', 'block'],
  required: ['to', 'data'],
  kinds: {
    to: 'address',
    data: 'hex',
    from: 'variable',
    multiplier: 'decimal',
    evmChainID: 'uint',
    block: 'block',
  },
  async run(task) {
    const chain = task.context.chain
    if (!chain?.estimateGas)
      throw new TaskError('no chain access that can estimate gas is configured', { kind: 'config' })
    checkChainId(task)
    const to = addressOf(task.value('to'), 'to')
    const fromValue = task.value('from')
    const from = fromValue === undefined ? ZeroAddress : addressOf(fromValue, 'from')
    const data = hexOf(bytesParam(task.value('data'), 'data'), 'data')
    const multiplier = decimalOf(task.value('multiplier') ?? '1', 'multiplier')
    const maximum = task.context.defaultGasLimit ?? DEFAULT_GAS_LIMIT
    let estimate: bigint
    try {
      estimate = await chain.estimateGas({ from, to, data, blockNumber: blockTag(task) })
    } catch {
      return maximum
    }
    const scaled = new Decimal(estimate.toString()).times(multiplier).trunc()
    if (scaled.isNegative())
      throw new TaskError(`multiplier ${multiplier.toFixed()} makes the limit negative`)
    const limit = BigInt(scaled.toFixed(0))
    return limit > maximum ? maximum : limit
  },
}

function addressOf(value: unknown, name: string): string {
  if (typeof value === 'string' && /^0x[0-9a-fA-F]{40}$/.test(value))
    return getAddress(value.toLowerCase())
  throw new TaskError(`${name} must be an address, got ${describe(value)}`)
}
