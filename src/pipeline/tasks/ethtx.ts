import { getAddress, isHexString } from 'ethers'
import { forwardCalldata } from '../forwarding.ts'
import { optionalBoolean, TaskError, type TaskDefinition, type TaskRun } from '../task.ts'
import { isPlainObject } from '../values.ts'
import { checkChainId } from './chain-params.ts'
import { describe, integerAttribute } from './convert.ts'

/**
 * ethtx(to, data, from, gasLimit, minConfirmations, failOnRevert, evmChainID, txMeta,
 * transmitChecker): hands the transaction to the run's ChainAccess (the runner's sender, or the dry
 * run's recorder). The idempotency key is the run id plus the task id, so a retried run cannot send a
 * second transaction for the same step. A job with forwardingAllowed sends it through the chain's
 * AuthorizedForwarder (`forward(to, data)`), as a node with forwarders does; `from` must list every
 * sender key, since the runner picks the key per run. Output: the sender's outcome
 * `{ txHash?, status }`, with the forwarder and txMeta when there are.
 */
export const ethtx: TaskDefinition = {
  type: 'ethtx',
  // It reaches the network or the chain: it runs in the pipeline's own thread.
  runsIn: 'main',
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
  jsonAttributes: ['transmitChecker', 'txMeta', 'from'],
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
    if (!chain) throw new TaskError('no chain access configured for ethtx', { kind: 'config' })
    checkChainId(task)
    checkFrom(task)
    const to = task.value('to')
    if (typeof to !== 'string' || !/^0x[0-9a-fA-F]{40}$/.test(to))
      throw new TaskError(`to must be an address, got ${describe(to)}`)
    const data = task.value('data', { fromInput: true })
    if (typeof data !== 'string' || !isHexString(data))
      throw new TaskError(`data must be 0x-hex calldata, got ${describe(data)}`)
    const gasLimit = task.value('gasLimit') ?? task.context.defaultGasLimit
    const target = forwarded(task, getAddress(to.toLowerCase()), data)
    const txMeta = task.json('txMeta')
    const outcome = await chain.sendTransaction({
      ...target,
      gasLimit:
        gasLimit === undefined ? undefined : BigInt(integerAttribute(gasLimit, 'gasLimit', 0)),
      minConfirmations: integerAttribute(task.value('minConfirmations'), 'minConfirmations', 0),
      failOnRevert: optionalBoolean(task, 'failOnRevert', false),
      idempotencyKey: `${task.context.runId}:${task.id}`,
      ...(simulateFirst(task.json('transmitChecker')) ? { simulate: true } : {}),
      signal: task.signal,
    })
    return {
      ...outcome,
      ...(task.context.forwardingAllowed ? { forwarder: target.to } : {}),
      ...(txMeta === undefined ? {} : { txMeta }),
    }
  },
}

/** The transaction as sent: to the chain's AuthorizedForwarder for a job with forwardingAllowed. */
function forwarded(task: TaskRun, to: string, data: string): { to: string; data: string } {
  if (!task.context.forwardingAllowed) return { to, data }
  const forwarder = task.context.forwarder
  if (!forwarder)
    throw new TaskError(
      'the job has forwardingAllowed = true, and this chain has no forwarder: set FORWARDER_ADDRESS (CHAINS_FILE: forwarder_address) to an AuthorizedForwarder the Operator authorises, or remove forwardingAllowed',
      { kind: 'config' },
    )
  return {
    to: getAddress(forwarder.toLowerCase()),
    data: forwardCalldata(to, data),
  }
}

/**
 * Chainlink's `from`: the keys a transaction may go from. The runner picks one of all its keys per
 * run, so `from` is honoured only when it lists every one of them; a dry run knows no keys.
 */
function checkFrom(task: TaskRun): void {
  const listed = task.json('from')
  if (listed === undefined) return
  if (!Array.isArray(listed) || listed.some((item) => typeof item !== 'string'))
    throw new TaskError(`from must be a list of addresses, got ${describe(listed)}`)
  const senders = task.context.senders
  if (!senders) return
  const allowed = new Set((listed as string[]).map((address) => address.toLowerCase()))
  const missing = senders.filter((address) => !allowed.has(address.toLowerCase()))
  if (missing.length > 0)
    throw new TaskError(
      `from lists ${listed.length} address(es), and this runner sends from any of its keys (one per run): add ${missing.join(', ')} to from, or remove from`,
      { kind: 'config' },
    )
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
