import { getAddress, isHexString } from 'ethers'
import { TaskError, withCause, type TaskDefinition } from '../task.ts'
import { describe, integerAttribute } from './convert.ts'

/** ethcall(contract, data, from, gas, block): an eth_call through the run's ChainAccess; output is the 0x-hex result. */
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
  async run(task) {
    const chain = task.context.chain
    if (!chain) throw new TaskError('no chain access configured for ethcall')
    const contract = task.value('contract')
    if (typeof contract !== 'string' || !/^0x[0-9a-fA-F]{40}$/.test(contract))
      throw new TaskError(`contract must be an address, got ${describe(contract)}`)
    const data = task.value('data', { fromInput: true })
    if (typeof data !== 'string' || !isHexString(data))
      throw new TaskError(`data must be 0x-hex calldata, got ${describe(data)}`)
    const from = task.value('from')
    if (from !== undefined && (typeof from !== 'string' || !/^0x[0-9a-fA-F]{40}$/.test(from)))
      throw new TaskError(`from must be an address, got ${describe(from)}`)
    const gas = task.value('gas')
    const block = task.value('block')
    try {
      return await chain.call({
        to: getAddress(contract.toLowerCase()),
        data,
        from: typeof from === 'string' ? getAddress(from.toLowerCase()) : undefined,
        gasLimit: gas === undefined ? undefined : BigInt(integerAttribute(gas, 'gas', 0)),
        blockNumber:
          block === undefined || block === 'latest'
            ? 'latest'
            : BigInt(integerAttribute(block, 'block', 0)),
      })
    } catch (error) {
      if (error instanceof TaskError) throw error
      throw new TaskError(`eth_call to ${contract} failed: ${(error as Error).message}`, {
        ...withCause(error),
        retryable: true,
      })
    }
  },
}
