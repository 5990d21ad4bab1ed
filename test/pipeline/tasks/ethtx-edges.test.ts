import { describe, expect, it } from 'vitest'
import { RecordingChainAccess, TASK_TYPES } from '../../../src/pipeline/index.ts'
import { runTask } from '../support/task.ts'

/**
 * ethtx's edges: what it hands the chain (gas limit, confirmations, failOnRevert, the idempotency
 * key, simulate, the task's signal), what it answers, and the words and kinds of its refusals, which
 * tell a spec's author (bad_input) from the runner's operator (config).
 */
const OPERATOR = '0xe7f1725E7734CE288F8367e1Bb143E90bb3F0512'
const FORWARDER = '0xCf7Ed3AccA5a467e9e704C703E8D87F634fB0Fc9'
const KEY = '0x70997970C51812dc3A010C7d01b50e0d17dc79C8'
const check = (attributes: Record<string, string>) => TASK_TYPES.get('ethtx')!.check!(attributes)

async function send(
  attributes: Record<string, string>,
  options: Parameters<typeof runTask>[2] = {},
  signal?: AbortSignal,
) {
  const chain = new RecordingChainAccess()
  const outcome = await runTask(
    'ethtx',
    { to: OPERATOR, data: '0x1234', ...attributes },
    { ...options, context: { chain, ...options.context } },
    signal,
  )
  return { outcome, tx: chain.transactions[0]!, sent: chain.transactions.length }
}

async function refusal(
  attributes: Record<string, string>,
  options: Parameters<typeof runTask>[2] = {},
): Promise<{ message: string; kind: string; sent: number }> {
  const chain = new RecordingChainAccess()
  try {
    await runTask(
      'ethtx',
      { to: OPERATOR, data: '0x1234', ...attributes },
      { ...options, context: { chain, ...options.context } },
    )
  } catch (error) {
    return {
      ...(error as { message: string; kind: string }),
      message: (error as Error).message,
      sent: chain.transactions.length,
    }
  }
  throw new Error('expected the task to fail')
}

describe('ethtx check: transmitChecker at load', () => {
  it('accepts none, simulate, an empty CheckerType, a variable, and leaves text that is not JSON to the loader', () => {
    for (const transmitChecker of [
      '',
      '{"CheckerType": "simulate"}',
      '{"CheckerType": ""}',
      '{}',
      'null',
      '$(checker)',
      '{"CheckerType": $(type)}',
      // A placeholder written in quotes is the loader's JSON check's to report, not a checker type.
      '{"CheckerType": "$(type)"}',
      'not json',
    ])
      expect(check({ to: OPERATOR, transmitChecker }), transmitChecker).toEqual([])
    expect(check({ to: OPERATOR })).toEqual([])
  })

  it('refuses another checker type or a value that is not an object, in words without the attribute name', () => {
    expect(check({ transmitChecker: '{"CheckerType": "vrf_v2"}' })).toEqual([
      {
        attribute: 'transmitChecker',
        message: 'CheckerType "vrf_v2" is not supported (only "simulate")',
      },
    ])
    expect(check({ transmitChecker: '["simulate"]' })).toEqual([
      {
        attribute: 'transmitChecker',
        message: 'must be a JSON object such as {"CheckerType": "simulate"}, got an array',
      },
    ])
    expect(check({ transmitChecker: '"simulate"' })[0]!.message).toBe(
      'must be a JSON object such as {"CheckerType": "simulate"}, got "simulate"',
    )
  })
})

describe('ethtx run: the transaction it hands the chain', () => {
  it('defaults: no gas limit, no confirmations, no failOnRevert, no simulation; the run and task id as key', async () => {
    const signal = new AbortController().signal
    const { outcome, tx } = await send({}, { context: { runId: 'run-7' } }, signal)
    expect(tx).toEqual({
      to: OPERATOR,
      data: '0x1234',
      gasLimit: undefined,
      minConfirmations: 0,
      failOnRevert: false,
      idempotencyKey: 'run-7:task',
      signal,
    })
    // Nothing more: no forwarder, no txMeta key, when there are none.
    expect(Object.keys(outcome as object)).toEqual(['status'])
  })

  it('takes its attributes, written or as variables, and the spec gas limit when it gives none', async () => {
    const { tx } = await send({
      to: OPERATOR.toLowerCase(),
      gasLimit: '500000',
      minConfirmations: '3',
      failOnRevert: 'true',
      transmitChecker: '{"CheckerType": "simulate"}',
    })
    expect(tx).toMatchObject({
      to: OPERATOR,
      gasLimit: 500000n,
      minConfirmations: 3,
      failOnRevert: true,
      simulate: true,
    })
    expect((await send({}, { context: { defaultGasLimit: 90000n } })).tx.gasLimit).toBe(90000n)
    expect(
      (await send({ gasLimit: '$(gas)' }, { vars: { gas: 7n }, context: { defaultGasLimit: 1n } }))
        .tx.gasLimit,
    ).toBe(7n)
    const noSimulation = await send({ transmitChecker: '{"CheckerType": ""}' })
    expect(noSimulation.tx).not.toHaveProperty('simulate')
    expect(
      (await send({ transmitChecker: '$(checker)' }, { vars: { checker: null } })).tx,
    ).not.toHaveProperty('simulate')
  })

  it('the calldata: the data attribute, or else the first input', async () => {
    expect((await send({ data: '$(call)' }, { vars: { call: '0xabcd' } })).tx.data).toBe('0xabcd')
    const chain = new RecordingChainAccess()
    await runTask('ethtx', { to: OPERATOR }, { inputs: ['0x0102'], context: { chain } })
    expect(chain.transactions[0]!.data).toBe('0x0102')
  })

  it('answers the outcome, with the forwarder and txMeta when there are', async () => {
    const meta = await send({ txMeta: '{"jobID": $(id)}' }, { vars: { id: 5 } })
    expect(meta.outcome).toEqual({ status: 'recorded', txMeta: { jobID: 5 } })
    const forwarded = await send(
      {},
      { context: { forwardingAllowed: true, forwarder: FORWARDER.toLowerCase() } },
    )
    expect(forwarded.tx.to).toBe(FORWARDER)
    expect(forwarded.outcome).toEqual({ status: 'recorded', forwarder: FORWARDER })
  })
})

describe('ethtx run: refusals', () => {
  it('no chain: a config error', async () => {
    const error = await runTask('ethtx', { to: OPERATOR, data: '0x12' }).catch(
      (caught: unknown) => caught,
    )
    expect(error).toMatchObject({ message: 'no chain access configured for ethtx', kind: 'config' })
  })

  it('a to that is not an address, or calldata that is not hex: bad input, nothing sent', async () => {
    expect(await refusal({ to: `${OPERATOR}00` })).toMatchObject({
      message: `to must be an address, got "${OPERATOR}00"`,
      kind: 'bad_input',
      sent: 0,
    })
    expect((await refusal({ to: ` ${OPERATOR}` })).message).toBe(
      `to must be an address, got " ${OPERATOR}"`,
    )
    expect((await refusal({ to: '$(to)' }, { vars: { to: 5n } })).message).toBe(
      'to must be an address, got 5',
    )
    // A list holding one address is not an address.
    expect((await refusal({ to: '$(to)' }, { vars: { to: [OPERATOR] } })).message).toBe(
      'to must be an address, got an array',
    )
    expect(await refusal({ data: '0x12zz' })).toMatchObject({
      message: 'data must be 0x-hex calldata, got "0x12zz"',
      kind: 'bad_input',
      sent: 0,
    })
    expect((await refusal({ data: '$(d)' }, { vars: { d: 12 } })).message).toBe(
      'data must be 0x-hex calldata, got 12',
    )
  })

  it('a gas limit, confirmations or failOnRevert it cannot read: refused by name, nothing sent', async () => {
    expect(await refusal({ gasLimit: 'lots' })).toMatchObject({
      message: 'gasLimit must be a non-negative integer, got "lots"',
      sent: 0,
    })
    expect((await refusal({ minConfirmations: '-1' })).message).toBe(
      'minConfirmations must be a non-negative integer, got "-1"',
    )
    expect((await refusal({ failOnRevert: 'maybe' })).message).toBe(
      'failOnRevert must be true or false, got "maybe"',
    )
  })

  it('forwardingAllowed without a forwarder: a config error, nothing sent', async () => {
    expect(await refusal({}, { context: { forwardingAllowed: true } })).toMatchObject({
      message: expect.stringContaining('this chain has no forwarder: set FORWARDER_ADDRESS'),
      kind: 'config',
      sent: 0,
    })
  })

  it('a transmitChecker other than simulate is refused at run time too', async () => {
    expect(
      (await refusal({ transmitChecker: '$(c)' }, { vars: { c: { CheckerType: 'vrf' } } })).message,
    ).toBe('transmitChecker: CheckerType "vrf" is not supported (only "simulate")')
  })

  it('from: a list of addresses; holds when it lists every sender key, in any case', async () => {
    expect((await refusal({ from: '"0xabc"' })).message).toBe(
      'from must be a list of addresses, got "0xabc"',
    )
    expect((await refusal({ from: '[1]' })).message).toBe(
      'from must be a list of addresses, got an array',
    )
    expect((await refusal({ from: `["${KEY}", 1]` })).sent).toBe(0)
    // Without known senders (a dry run), any list holds.
    expect((await send({ from: `["${KEY}"]` })).sent).toBe(1)
    expect(
      (await send({ from: `["${KEY.toLowerCase()}"]` }, { context: { senders: [KEY] } })).sent,
    ).toBe(1)
    expect(
      (await send({ from: `["${KEY}"]` }, { context: { senders: [KEY.toLowerCase()] } })).sent,
    ).toBe(1)
    const left = await refusal({ from: `["${KEY}"]` }, { context: { senders: [KEY, OPERATOR] } })
    expect(left).toMatchObject({
      message: `from lists 1 address(es), and this runner sends from any of its keys (one per run): add ${OPERATOR} to from, or remove from`,
      kind: 'config',
      sent: 0,
    })
    const two = await refusal(
      { from: `["${KEY}"]` },
      { context: { senders: [OPERATOR, KEY, FORWARDER] } },
    )
    expect(two.message).toContain(`add ${OPERATOR}, ${FORWARDER} to from`)
  })

  it('evmChainID: the job chain or none', async () => {
    const vars = { jobSpec: { evmChainID: '31337' } }
    expect((await send({ evmChainID: '31337' }, { vars })).sent).toBe(1)
    expect(await refusal({ evmChainID: '1' }, { vars })).toMatchObject({ kind: 'config', sent: 0 })
  })
})
