import { getAddress, isHexString } from 'ethers'
import { optionalBoolean, TaskError, withCause, type TaskDefinition } from '../task.ts'
import { blockTag, checkChainId } from './chain-params.ts'
import { describe, integerAttribute } from './convert.ts'

/**
 * ethcall(contract, data, from, gas, block, gasPrice, gasTipCap, gasFeeCap, gasUnlimited,
 * extractRevertReason, evmChainID): an eth_call through the run's ChainAccess; output is the 0x-hex
 * result. A node that cannot be reached is retryable; a revert is final, its reason in the message.
 */
export const ethcall: TaskDefinition = {
  type: 'ethcall',
  attributes: [
    'contract',
    'data',
    'from',
    'gas',
    'block',
    'evmChainID',
    'gasPrice',
    'gasTipCap',
    'gasFeeCap',
    'gasUnlimited',
    'extractRevertReason',
  ],
  required: ['contract'],
  kinds: {
    contract: 'address',
    data: 'hex',
    from: 'address',
    gas: 'uint',
    evmChainID: 'uint',
    gasPrice: 'uint',
    gasTipCap: 'uint',
    gasFeeCap: 'uint',
    gasUnlimited: 'boolean',
    extractRevertReason: 'boolean',
  },
  async run(task) {
    const chain = task.context.chain
    if (!chain) throw new TaskError('no chain access configured for ethcall', { kind: 'config' })
    checkChainId(task)
    const contract = task.value('contract')
    if (typeof contract !== 'string' || !/^0x[0-9a-fA-F]{40}$/.test(contract))
      throw new TaskError(`contract must be an address, got ${describe(contract)}`)
    const data = task.value('data', { fromInput: true })
    if (typeof data !== 'string' || !isHexString(data))
      throw new TaskError(`data must be 0x-hex calldata, got ${describe(data)}`)
    const from = task.value('from')
    if (from !== undefined && (typeof from !== 'string' || !/^0x[0-9a-fA-F]{40}$/.test(from)))
      throw new TaskError(`from must be an address, got ${describe(from)}`)
    // gasUnlimited: no gas limit on the call (the node's own cap), whatever `gas` says.
    const gas = optionalBoolean(task, 'gasUnlimited', false) ? undefined : optionalWei(task, 'gas')
    try {
      return await chain.call({
        to: getAddress(contract.toLowerCase()),
        data,
        from: typeof from === 'string' ? getAddress(from.toLowerCase()) : undefined,
        gasLimit: gas,
        blockNumber: blockTag(task),
        gasPrice: optionalWei(task, 'gasPrice'),
        maxPriorityFeePerGas: optionalWei(task, 'gasTipCap'),
        maxFeePerGas: optionalWei(task, 'gasFeeCap'),
      })
    } catch (error) {
      if (error instanceof TaskError) throw error
      // The reason is always in the message (Chainlink decodes it only with extractRevertReason).
      const reverted = /revert/i.test((error as Error).message)
      throw new TaskError(`eth_call to ${contract} failed: ${(error as Error).message}`, {
        ...withCause(error),
        ...(reverted ? { kind: 'reverted', retryable: false } : { retryable: true }),
      })
    }
  },
}

function optionalWei(task: Parameters<TaskDefinition['run']>[0], name: string): bigint | undefined {
  const value = task.value(name)
  return value === undefined ? undefined : BigInt(integerAttribute(value, name, 0))
}
