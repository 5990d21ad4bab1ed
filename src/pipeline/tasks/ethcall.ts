import { getAddress, isCallException } from 'ethers'
import { optionalBoolean, TaskError, withCause, type TaskDefinition } from '../task.ts'
import { blockTag, checkChainId } from './chain-params.ts'
import { bytesParam, describe, hexOf, integerAttribute } from './convert.ts'
import { DEFAULT_GAS_LIMIT } from './estimategaslimit.ts'

/**
 * ethcall(contract, data, from, gas, block, gasPrice, gasTipCap, gasFeeCap, gasUnlimited,
 * extractRevertReason, evmChainID): an eth_call through the run's ChainAccess; output is the 0x-hex
 * result. A node that cannot be reached is retryable; a revert is final, its reason in the message.
 */
export const ethcall: TaskDefinition = {
  type: 'ethcall',
  // It reaches the network or the chain: it runs in the pipeline's own thread.
  runsIn: 'main',
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
    block: 'block',
  },
  async run(task) {
    const chain = task.context.chain
    if (!chain) throw new TaskError('no chain access configured for ethcall', { kind: 'config' })
    checkChainId(task)
    const contract = task.value('contract')
    if (typeof contract !== 'string' || !/^0x[0-9a-fA-F]{40}$/.test(contract))
      throw new TaskError(`contract must be an address, got ${describe(contract)}`)
    // Chainlink's BytesParam: bytes, 0x-hex, or text as its bytes.
    const data = hexOf(bytesParam(task.value('data', { fromInput: true }), 'data'), 'data')
    const from = task.value('from')
    if (from !== undefined && (typeof from !== 'string' || !/^0x[0-9a-fA-F]{40}$/.test(from)))
      throw new TaskError(`from must be an address, got ${describe(from)}`)
    // gasUnlimited: no gas limit on the call (the node's own cap), whatever `gas` says; else `gas`,
    // else the job's gas limit (gasLimit, else 500,000), as a node selects it.
    const gas = optionalBoolean(task, 'gasUnlimited', false)
      ? undefined
      : (optionalWei(task, 'gas') ?? task.context.defaultGasLimit ?? DEFAULT_GAS_LIMIT)
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
      // A revert is what ethers classified as one where the node's answer was read (its
      // CALL_EXCEPTION); the reason is in the message (Chainlink decodes it only with
      // extractRevertReason).
      const reverted = isCallException(error)
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
