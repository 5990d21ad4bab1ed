import { getAddress, isHexString } from 'ethers'
import { optionalBoolean, TaskError, type TaskDefinition } from '../task.ts'
import { isPlainObject } from '../values.ts'
import { describe, integerAttribute } from './convert.ts'

/**
 * ethtx(to, data, gasLimit, minConfirmations, failOnRevert, evmChainID): hands the transaction to the
 * run's ChainAccess (the runner's sender, or the dry run's recorder). The idempotency key is the run id
 * plus the task id, so a retried run cannot send a second transaction for the same step.
 * Output: the sender's outcome `{ txHash?, status }`.
 */
export const ethtx: TaskDefinition = {
  type: 'ethtx',
  attributes: [
    'to',
    'from',
    'data',
    'gasLimit',
    'minConfirmations',
    'failOnRevert',
    'evmChainID',
    'txMeta',
    'transmitChecker',
  ],
  jsonAttributes: ['transmitChecker', 'txMeta'],
  kinds: {
    to: 'address',
    from: 'addresses',
    data: 'hex',
    gasLimit: 'uint',
    minConfirmations: 'uint',
    failOnRevert: 'boolean',
    evmChainID: 'uint',
  },
  required: ['to'],
  check(attributes) {
    const text = attributes.transmitChecker
    if (!text || text.includes('$(')) return []
    try {
      simulateFirst(JSON.parse(text))
      return []
    } catch (error) {
      // Text that is not JSON is reported by the loader's check of jsonAttributes.
      return error instanceof TaskError
        ? [
            {
              attribute: 'transmitChecker',
              message: error.message.replace(/^transmitChecker:? ?/, ''),
            },
          ]
        : []
    }
  },
  async run(task) {
    const chain = task.context.chain
    if (!chain) throw new TaskError('no chain access configured for ethtx')
    const to = task.value('to')
    if (typeof to !== 'string' || !/^0x[0-9a-fA-F]{40}$/.test(to))
      throw new TaskError(`to must be an address, got ${describe(to)}`)
    const data = task.value('data', { fromInput: true })
    if (typeof data !== 'string' || !isHexString(data))
      throw new TaskError(`data must be 0x-hex calldata, got ${describe(data)}`)
    const gasLimit = task.value('gasLimit') ?? task.context.defaultGasLimit
    const chainId = task.value('evmChainID')
    return chain.sendTransaction({
      to: getAddress(to.toLowerCase()),
      data,
      gasLimit:
        gasLimit === undefined ? undefined : BigInt(integerAttribute(gasLimit, 'gasLimit', 0)),
      minConfirmations: integerAttribute(task.value('minConfirmations'), 'minConfirmations', 0),
      failOnRevert: optionalBoolean(task, 'failOnRevert', false),
      idempotencyKey: `${task.context.runId}:${task.id}`,
      evmChainID:
        chainId === undefined ? undefined : BigInt(integerAttribute(chainId, 'evmChainID', 0)),
      ...(simulateFirst(task.json('transmitChecker')) ? { simulate: true } : {}),
    })
  },
}

/**
 * Chainlink's `transmitChecker`: `{"CheckerType": "simulate"}` has the transaction run with eth_call
 * before it is sent. The other checkers belong to VRF jobs.
 */
function simulateFirst(checker: unknown): boolean {
  if (checker === undefined || checker === null) return false
  if (!isPlainObject(checker))
    throw new TaskError(
      `transmitChecker must be a JSON object such as {"CheckerType": "simulate"}, got ${describe(checker)}`,
    )
  const type = checker.CheckerType
  if (type === undefined || type === '') return false
  if (type === 'simulate') return true
  throw new TaskError(
    `transmitChecker: CheckerType ${JSON.stringify(type)} is not supported (only "simulate")`,
  )
}
