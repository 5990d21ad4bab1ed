import { describe, expect, it } from 'vitest'
import { ZeroAddress as ZERO } from 'ethers'
import {
  RecordingChainAccess,
  type GasEstimateRequest,
  type Vars,
} from '../../../src/pipeline/index.ts'
import { TaskError } from '../../../src/pipeline/task-error.ts'
import { callException, runTask, taskFailure as refusal } from '../support/task.ts'

// The chain-reading tasks' edges: what ethcall and estimategaslimit ask of the chain (address, data,
// sender, gas, block), which attributes they refuse and with which words, and how a task naming
// another chain than the job's is refused (chain-params.ts).

const CONTRACT = '0xe7f1725e7734ce288f8367e1bb143e90bb3f0512'
const CHECKSUMMED = '0xe7f1725E7734CE288F8367e1Bb143E90bb3F0512'
const SENDER = '0xcf7ed3acca5a467e9e704c703e8d87f634fb0fc9'
const SENDER_CHECKSUMMED = '0xCf7Ed3AccA5a467e9e704C703E8D87F634fB0Fc9'
const WORD = '0x' + '00'.repeat(31) + '2a'

/** Runs ethcall against a chain that answers WORD, and gives the answer and what the chain was asked. */
async function ethcall(
  attributes: Record<string, string>,
  options: { vars?: Vars; inputs?: unknown[]; chain?: RecordingChainAccess } = {},
) {
  const chain = options.chain ?? new RecordingChainAccess(async () => WORD)
  const value = await runTask(
    'ethcall',
    { contract: CONTRACT, ...(options.inputs ? {} : { data: '0x01' }), ...attributes },
    { vars: options.vars, inputs: options.inputs, context: { chain } },
  )
  return { value, call: chain.calls[0]! }
}

/** The error ethcall fails with (a chain that is never reached when the task refuses first). */
async function ethcallError(
  attributes: Record<string, string>,
  options: { vars?: Vars; chain?: RecordingChainAccess } = {},
): Promise<TaskError> {
  const chain = options.chain ?? new RecordingChainAccess(async () => WORD)
  return refusal(
    runTask(
      'ethcall',
      { contract: CONTRACT, data: '0x', ...attributes },
      { vars: options.vars, context: { chain } },
    ),
  )
}

describe("evmChainID: a task goes to the job's chain only", () => {
  const onChain = (evmChainID: string, vars: Vars) => ethcall({ evmChainID }, { vars })

  it("runs when the task names the job's chain, written with spaces around or as a variable", async () => {
    expect((await onChain('1337', { jobSpec: { evmChainID: 1337 } })).value).toBe(WORD)
    expect((await onChain(' 1337 ', { jobSpec: { evmChainID: '1337' } })).value).toBe(WORD)
    expect((await onChain('$(c)', { c: ' 1337 ', jobSpec: { evmChainID: 1337n } })).value).toBe(
      WORD,
    )
  })

  it('runs when the job has no chain of its own, and when the task names none (an empty variable)', async () => {
    expect((await onChain('5', {})).value).toBe(WORD)
    expect((await onChain('5', { jobSpec: {} })).value).toBe(WORD)
    expect((await onChain('5', { jobSpec: { evmChainID: null } })).value).toBe(WORD)
    expect((await onChain('5', { jobSpec: { evmChainID: undefined } })).value).toBe(WORD)
    expect((await onChain('$(c)', { c: '', jobSpec: { evmChainID: 1337 } })).value).toBe(WORD)
  })

  it("refuses another chain than the job's, as a configuration error, and sends nothing", async () => {
    const chain = new RecordingChainAccess(async () => WORD)
    const error = await ethcallError(
      { evmChainID: '5' },
      { chain, vars: { jobSpec: { evmChainID: 1337 } } },
    )
    expect(error.message).toBe(
      "evmChainID 5: this job runs on chain 1337, and a task's transactions and calls go to the job's chain only (one runner per chain): remove evmChainID or make it 1337",
    )
    expect(error.kind).toBe('config')
    expect(chain.calls).toEqual([])
  })

  it('refuses an evmChainID that is not a chain id, whether or not the job has a chain', async () => {
    for (const written of ['abc', 'x5', '5x', '-5', '1.5']) {
      const error = await ethcallError({ evmChainID: written })
      expect(error.message).toBe(`evmChainID must be a chain id, got "${written}"`)
      expect(error.kind).toBe('bad_input')
    }
  })
})

describe('block: latest, pending or a number', () => {
  const blockOf = async (block: string, vars: Vars = {}) =>
    (await ethcall({ block }, { vars })).call.blockNumber

  it('asks for the latest block by default, for "latest", and for an empty variable', async () => {
    expect((await ethcall({})).call.blockNumber).toBe('latest')
    expect(await blockOf('latest')).toBe('latest')
    expect(await blockOf('$(b)', { b: '' })).toBe('latest')
  })

  it('asks for the pending block, or a numbered one, given as text, with spaces, or as a bigint', async () => {
    expect(await blockOf('pending')).toBe('pending')
    expect(await blockOf('$(b)', { b: 'pending' })).toBe('pending')
    expect(await blockOf('123')).toBe(123n)
    expect(await blockOf(' 77 ')).toBe(77n)
    expect(await blockOf('$(b)', { b: 9n })).toBe(9n)
    expect(await blockOf('$(b)', { b: 12 })).toBe(12n)
  })

  it('refuses any other block, naming it, before asking the chain', async () => {
    for (const [written, shown] of [
      ['earliest', '"earliest"'],
      ['x12', '"x12"'],
      ['12x', '"12x"'],
      ['0x10', '"0x10"'],
      ['$(b)', '1.5'],
    ] as const) {
      const chain = new RecordingChainAccess(async () => WORD)
      const error = await ethcallError({ block: written }, { chain, vars: { b: 1.5 } })
      expect(error.message).toBe(`block must be latest, pending or a block number, got ${shown}`)
      // Refused as given, not wrapped as a failed call, and not worth retrying.
      expect(error.retryable).toBe(false)
      expect(chain.calls).toEqual([])
    }
    // A negative block from a variable: ethers would count it back from the head.
    const chain = new RecordingChainAccess(async () => WORD)
    const negative = await ethcallError({ block: '$(b)' }, { chain, vars: { b: -5n } })
    expect(negative.message).toMatch(/^block must be latest, pending or a block number, got /)
    expect(chain.calls).toEqual([])
  })
})

describe('ethcall: what it asks of the chain', () => {
  it('refuses to run without a chain access, as a configuration error', async () => {
    const error = await refusal(runTask('ethcall', { contract: CONTRACT, data: '0x' }))
    expect(error.message).toBe('no chain access configured for ethcall')
    expect(error.kind).toBe('config')
  })

  it('calls the contract, checksummed, with the first input as data when no data is given', async () => {
    const { value, call } = await ethcall({}, { inputs: ['0xabcd'] })
    expect(value).toBe(WORD)
    expect(call).toEqual({
      to: CHECKSUMMED,
      data: '0xabcd',
      from: undefined,
      gasLimit: 500_000n,
      blockNumber: 'latest',
      gasPrice: undefined,
      maxPriorityFeePerGas: undefined,
      maxFeePerGas: undefined,
    })
  })

  it('sends the sender, gas and fee attributes as given', async () => {
    const { call } = await ethcall({
      data: '0x01',
      from: SENDER,
      gas: '21000',
      gasPrice: '7',
      gasTipCap: '2',
      gasFeeCap: '30',
    })
    expect(call).toMatchObject({
      from: SENDER_CHECKSUMMED,
      gasLimit: 21_000n,
      gasPrice: 7n,
      maxPriorityFeePerGas: 2n,
      maxFeePerGas: 30n,
    })
    const upper = await ethcall({
      data: '0x01',
      from: SENDER_CHECKSUMMED.toUpperCase().replace('0X', '0x'),
    })
    expect(upper.call.from).toBe(SENDER_CHECKSUMMED)
    // gasUnlimited: no limit at all, whatever gas says (the node's own cap applies).
    const unlimited = await ethcall({ gas: '21000', gasUnlimited: 'true' })
    expect(unlimited.call.gasLimit).toBeUndefined()
    expect((await ethcall({ gasUnlimited: 'false' })).call.gasLimit).toBe(500_000n)
  })

  it('refuses a contract or sender that is not an address, naming it, and calls nothing', async () => {
    const longer = CONTRACT + 'ff'
    const cases: [Record<string, string>, string][] = [
      [{ contract: 'nobody' }, 'contract must be an address, got "nobody"'],
      [{ contract: 'zz' + CONTRACT }, `contract must be an address, got "zz${CONTRACT}"`],
      [{ contract: longer }, `contract must be an address, got "${longer}"`],
      [{ from: 'nobody' }, 'from must be an address, got "nobody"'],
      [{ from: 'zz' + SENDER }, `from must be an address, got "zz${SENDER}"`],
      [{ from: SENDER + 'ff' }, `from must be an address, got "${SENDER}ff"`],
      [{ from: SENDER.slice(0, 41) }, `from must be an address, got "${SENDER.slice(0, 41)}"`],
      [{ from: '0x' + 'zz'.repeat(20) }, `from must be an address, got "0x${'zz'.repeat(20)}"`],
      [{ from: '$(f)' }, 'from must be an address, got 5'],
      [{ contract: '$(a)' }, 'contract must be an address, got an array'],
      [{ from: '$(s)' }, 'from must be an address, got an array'],
    ]
    for (const [attributes, message] of cases) {
      const chain = new RecordingChainAccess(async () => WORD)
      const error = await ethcallError(
        { data: '0x', ...attributes },
        { chain, vars: { f: 5, a: [CONTRACT], s: [SENDER] } },
      )
      expect(error.message).toBe(message)
      expect(error.kind).toBe('bad_input')
      expect(chain.calls).toEqual([])
    }
  })

  it('refuses data that is not bytes, naming it', async () => {
    const error = await ethcallError({ data: '$(d)' }, { vars: { d: 5 } })
    expect(error.message).toBe('data: expected bytes or a 0x-hex string, got 5')
  })

  it('refuses a bad fee as given, not as a failed call', async () => {
    const error = await ethcallError({ data: '0x', gasPrice: '-1' })
    expect(error.message).toBe('gasPrice must be a non-negative integer, got "-1"')
    expect(error.retryable).toBe(false)
  })

  it('fails for good when the call reverts, and retryably when the node cannot be reached', async () => {
    // As ethers reports a node's revert: the error's code says it, whatever its words.
    const reverting = new RecordingChainAccess(async () => {
      throw callException(CONTRACT, 'price too old')
    })
    const reverted = await ethcallError({ data: '0x' }, { chain: reverting })
    expect(reverted.message).toMatch(
      new RegExp(`^eth_call to ${CONTRACT} failed: execution reverted: price too old \\(`),
    )
    expect([reverted.kind, reverted.retryable]).toEqual(['reverted', false])
    // A failure that only says "revert" in its words (a proxy's message) is not a revert.
    const proxied = new RecordingChainAccess(async () => {
      throw new Error('502 from the RPC proxy: upstream reverted to its fallback')
    })
    const notReverted = await ethcallError({ data: '0x' }, { chain: proxied })
    expect([notReverted.kind, notReverted.retryable]).not.toEqual(['reverted', false])
    expect(notReverted.retryable).toBe(true)
    const down = new RecordingChainAccess(async () => {
      throw new Error('connect ECONNREFUSED 127.0.0.1:8545')
    })
    const unreachable = await ethcallError({ data: '0x' }, { chain: down })
    expect(unreachable.message).toBe(
      `eth_call to ${CONTRACT} failed: connect ECONNREFUSED 127.0.0.1:8545`,
    )
    expect(unreachable.retryable).toBe(true)
  })
})

describe('estimategaslimit: the estimate, scaled and capped', () => {
  /** Runs estimategaslimit against a chain estimating `gas`, and gives the answer and the request. */
  async function estimate(
    attributes: Record<string, string>,
    options: { vars?: Vars; gas?: bigint; defaultGasLimit?: bigint } = {},
  ) {
    const requests: GasEstimateRequest[] = []
    const chain = new RecordingChainAccess(undefined, async (request) => {
      requests.push(request)
      return options.gas ?? 100_000n
    })
    const value = await runTask(
      'estimategaslimit',
      { to: CONTRACT, data: '0x01', ...attributes },
      { vars: options.vars, context: { chain, defaultGasLimit: options.defaultGasLimit } },
    )
    return { value, request: requests[0] }
  }
  const estimateError = (attributes: Record<string, string>, vars: Vars = {}) =>
    refusal(estimate(attributes, { vars }))

  it('refuses to run without a chain access that can estimate gas, as a configuration error', async () => {
    for (const chain of [
      undefined,
      Object.assign(new RecordingChainAccess(), { estimateGas: undefined }),
    ]) {
      const error = await refusal(
        runTask('estimategaslimit', { to: CONTRACT, data: '0x' }, { context: { chain } }),
      )
      expect(error.message).toBe('no chain access that can estimate gas is configured')
      expect(error.kind).toBe('config')
    }
  })

  it('asks the chain to estimate the call, from the zero address unless given a sender', async () => {
    const plain = await estimate({ data: '0xABCD' })
    expect(plain).toEqual({
      value: 100_000n,
      request: { from: ZERO, to: CHECKSUMMED, data: '0xabcd', blockNumber: 'latest' },
    })
    const sent = await estimate({ from: SENDER, block: '42' })
    expect(sent.request).toEqual({
      from: SENDER_CHECKSUMMED,
      to: CHECKSUMMED,
      data: '0x01',
      blockNumber: 42n,
    })
  })

  it('scales the estimate by the multiplier, truncated, and caps it at the job gas limit', async () => {
    expect((await estimate({ multiplier: '1.5' }, { gas: 1001n })).value).toBe(1501n)
    expect((await estimate({ multiplier: '2' }, { gas: 400_000n })).value).toBe(500_000n)
    expect((await estimate({}, { gas: 90_001n, defaultGasLimit: 90_000n })).value).toBe(90_000n)
    expect((await estimate({}, { gas: 90_000n, defaultGasLimit: 90_000n })).value).toBe(90_000n)
    expect((await estimate({ multiplier: '0' }, { gas: 5n })).value).toBe(0n)
  })

  it('answers the job gas limit when the chain cannot estimate', async () => {
    const chain = new RecordingChainAccess(undefined, async () => {
      throw new Error('execution reverted')
    })
    const value = await runTask(
      'estimategaslimit',
      { to: CONTRACT, data: '0x' },
      { context: { chain, defaultGasLimit: 77_000n } },
    )
    expect(value).toBe(77_000n)
  })

  it('refuses a multiplier that makes the limit negative, or is not a number', async () => {
    expect((await estimateError({ multiplier: '-1.5' })).message).toBe(
      'multiplier -1.5 makes the limit negative',
    )
    expect((await estimateError({ multiplier: 'twice' })).message).toBe(
      'multiplier: not a number: "twice"',
    )
  })

  it('refuses an address or data it cannot send, naming the attribute', async () => {
    const cases: [Record<string, string>, string][] = [
      [{ to: 'nobody' }, 'to must be an address, got "nobody"'],
      [{ to: 'zz' + CONTRACT }, `to must be an address, got "zz${CONTRACT}"`],
      [{ to: CONTRACT + 'ff' }, `to must be an address, got "${CONTRACT}ff"`],
      [{ to: '$(a)' }, 'to must be an address, got an array'],
      [{ to: '$(n)' }, 'to must be an address, got 5'],
      [{ from: 'nobody' }, 'from must be an address, got "nobody"'],
      [{ data: '$(n)' }, 'data: expected bytes or a 0x-hex string, got 5'],
    ]
    for (const [attributes, message] of cases) {
      const error = await estimateError(attributes, { a: [CONTRACT], n: 5 })
      expect(error.message).toBe(message)
      expect(error.kind).toBe('bad_input')
    }
  })
})
