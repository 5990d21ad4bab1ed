import { AbiCoder, getAddress } from 'ethers'
import { describe, expect, it } from 'vitest'
import { RecordingChainAccess, toPlain, toJsonText } from '../../../src/pipeline/index.ts'
import { runTask } from '../support/task.ts'

// Chainlink's test cases for memo, merge, lookup, fail, ethabidecode, ethabiencode2 and
// estimategaslimit (core/services/pipeline/task.<type>_test.go), as table tests.

async function failure(
  promise: Promise<unknown>,
): Promise<{ message: string; retryable: boolean }> {
  try {
    await promise
  } catch (error) {
    return error as { message: string; retryable: boolean }
  }
  throw new Error('expected the task to fail')
}

describe('memo (TestMemoTask): the value as an ObjectParam marshals it', () => {
  it.each<[string, unknown, string]>([
    ['nil', null, 'null'],
    ['bool', true, 'true'],
    ['bool false', false, 'false'],
    ['integer', 17, '"17"'],
    ['negative integer', -19, '"-19"'],
    ['float', 17.3, '"17.3"'],
    ['negative float', -17.3, '"-17.3"'],
    ['string', 'hello world', '"hello world"'],
    ['array', [17, 19], '[17,19]'],
  ])('%s', async (_name, input, marshalled) => {
    expect(toJsonText(await runTask('memo', {}, { inputs: [input] }))).toBe(marshalled)
    expect(toJsonText(await runTask('memo', { value: toJsonText(input) }))).toBe(marshalled)
  })
  it('value is JSON with variables: value="10" is the number 10', async () => {
    expect(toJsonText(await runTask('memo', { value: '10' }))).toBe('"10"')
    expect(await runTask('memo', { value: '{"a": $(x)}' }, { vars: { x: 5n } })).toEqual({ a: 5n })
  })
})

describe('merge (TestMergeTask)', () => {
  it.each<[string, string, string, Record<string, unknown>, unknown[], unknown]>([
    [
      'implicit left explicit right',
      '',
      '{"foo": "42", "bar": null, "blobber": false}',
      {},
      ['{"foo": "baz", "qux": 99, "flibber": null, "baz": true}'],
      { foo: '42', qux: 99, bar: null, flibber: null, baz: true, blobber: false },
    ],
    [
      'explicit left explicit right',
      '{"foo": "baz", "qux": 99, "flibber": null}',
      '{"foo": 42, "qux": null}',
      {},
      ['{"ignored": true}'],
      { foo: 42, qux: null, flibber: null },
    ],
    [
      'directions reversed',
      '{"foo": 42, "bar": null}',
      '{"foo": "baz", "qux": 99, "flibber": null}',
      {},
      ['{"ignored": true}'],
      { foo: 'baz', qux: 99, bar: null, flibber: null },
    ],
    [
      'explicit left variable data on right',
      '{"foo": 42, "bar": null}',
      '$(someInput)',
      { someInput: { foo: 'baz', qux: 99, flibber: null } },
      [],
      { foo: 'baz', qux: 99, bar: null, flibber: null },
    ],
  ])('%s', async (_name, left, right, vars, inputs, expected) => {
    expect(await runTask('merge', { left, right }, { vars, inputs })).toEqual(expected)
  })
  it.each<[string, string, string, Record<string, unknown>, unknown[], string]>([
    ['invalid implicit left explicit right', '', '{"foo": 42}', {}, ['"not a map"'], 'left-side'],
    ['implicit left invalid explicit right', '', 'not a map', {}, ['{"foo": "baz"}'], 'right-side'],
    [
      'explicit left invalid variable data on right',
      '{"foo": 42}',
      '$(someInput)',
      { someInput: 'this is a string' },
      [],
      'right-side',
    ],
  ])('%s', async (_name, left, right, vars, inputs, message) => {
    expect((await failure(runTask('merge', { left, right }, { vars, inputs }))).message).toContain(
      message,
    )
  })
})

describe('lookup and fail', () => {
  it('lookup: the key of the one input map, null when absent; anything but a map is an error', async () => {
    expect(await runTask('lookup', { key: 'a' }, { inputs: [{ a: 1n }] })).toBe(1n)
    expect(await runTask('lookup', { key: 'b' }, { inputs: [{ a: 1 }] })).toBeNull()
    expect((await failure(runTask('lookup', { key: 'a' }, { inputs: ['x'] }))).message).toContain(
      'unexpected input type',
    )
    expect(
      (await failure(runTask('lookup', { key: 'a' }, { inputs: [{}, {}] }))).message,
    ).toContain('exactly one input')
  })
  it('fail: its message, final', async () => {
    const error = await failure(runTask('fail', { msg: 'boom' }))
    expect(error).toMatchObject({ message: 'boom', retryable: false })
  })
})

const U_B_I_S =
  '0x000000000000000000000000000000000000000000000000000000000000007b0000000000000000000000000000000000000000000000000000000000000001fffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffebf0000000000000000000000000000000000000000000000000000000000000080000000000000000000000000000000000000000000000000000000000000000b666f6f206261722062617a000000000000000000000000000000000000000000'

describe('ethabidecode (TestETHABIDecodeTask)', () => {
  it('uint256, bool, int256, string', async () => {
    expect(
      await runTask(
        'ethabidecode',
        { abi: 'uint256 u, bool b, int256 i, string s', data: '$(foo)' },
        { vars: { foo: U_B_I_S } },
      ),
    ).toEqual({ u: 123n, b: true, i: -321n, s: 'foo bar baz' })
  })
  it('data locations (bytes memory) and weird spaces', async () => {
    const data = AbiCoder.defaultAbiCoder().encode(
      ['bytes', 'uint256', 'address'],
      ['0x00', 3225000000000000000n, '0xdeadbeefdeadbeefdeadbeefdeadbeefdeadbeef'],
    )
    const decoded = (await runTask(
      'ethabidecode',
      { abi: 'bytes memory performData, uint256  maxLinkPayment , address a' },
      { inputs: [data] },
    )) as Record<string, unknown>
    expect(toPlain(decoded)).toEqual({
      performData: '0x00',
      maxLinkPayment: '3225000000000000000',
      a: getAddress('0xdeadbeefdeadbeefdeadbeefdeadbeefdeadbeef'),
    })
  })
  it('no attribute names is refused; an errored input fails the task', async () => {
    expect(
      (await failure(runTask('ethabidecode', { abi: 'address, bytes32' }, { inputs: [U_B_I_S] })))
        .message,
    ).toContain('missing argument name')
    expect(await runTask('ethabidecode', { abi: 'uint256 u' }, { inputs: ['0x'] })).toEqual({})
  })
})

describe('ethabiencode2 (TestETHABIEncodeTask2)', () => {
  const fn = (name: string, inputs: object[]) => JSON.stringify({ name, inputs })
  it.each<[string, string, string, Record<string, unknown>, string]>([
    [
      'unusual characters in method name / uint256, bool, int256, string',
      fn('foo_Bar__3928', [
        { name: 'u', type: 'uint256' },
        { name: 'b', type: 'bool' },
        { name: 'i', type: 'int256' },
        { name: 's', type: 'string' },
      ]),
      '{ "u": $(foo), "b": $(bar), "i": $(baz), "s": $(quux) }',
      { foo: 123n, bar: true, baz: -321n, quux: 'foo bar baz' },
      '0xae506917' + U_B_I_S.slice(2),
    ],
    [
      'address[] calldata, uint80, uint32[2]',
      fn('chainLink', [
        { name: 'a', type: 'address[]' },
        { name: 'x', type: 'uint80' },
        { name: 's', type: 'uint32[2]' },
      ]),
      '{ "a": $(foo), "x": $(bar), "s": $(baz) }',
      {
        foo: [
          '0x6c91b062a774cbe8b9bf52f224c37badf98fc40b',
          '0xc4f27ead9083c756cc2c02aaa39b223fe8d0a0e5',
          '0x749e4598819b2b0e915a02120696c7b8fe16c09c',
        ],
        bar: 8293n,
        baz: [192n, 4182n],
      },
      '0xa3a122020000000000000000000000000000000000000000000000000000000000000080000000000000000000000000000000000000000000000000000000000000206500000000000000000000000000000000000000000000000000000000000000c0000000000000000000000000000000000000000000000000000000000000105600000000000000000000000000000000000000000000000000000000000000030000000000000000000000006c91b062a774cbe8b9bf52f224c37badf98fc40b000000000000000000000000c4f27ead9083c756cc2c02aaa39b223fe8d0a0e5000000000000000000000000749e4598819b2b0e915a02120696c7b8fe16c09c',
    ],
    ['no args', JSON.stringify({ name: 'noArgs' }), '', {}, '0x83c962bb'],
    [
      'hex string to fixed size byte array (fulfillOracleRequest(..., bytes32 data))',
      fn('asdf', [{ name: 'b', type: 'bytes32' }]),
      '{ "b": $(foo)}',
      { foo: '0x0000000000000000000000000000000000000000000000000000000000000001' },
      '0x628507ac0000000000000000000000000000000000000000000000000000000000000001',
    ],
    ...(['map', 'array'] as const).map(
      (shape): [string, string, string, Record<string, unknown>, string] => [
        `tuple with ${shape}`,
        fn('call', [
          {
            name: 'value',
            type: 'tuple',
            components: [
              { name: 'first', type: 'bytes32' },
              { name: 'last', type: 'bool' },
            ],
          },
        ]),
        '{ "value": $(value) }',
        {
          value:
            shape === 'map'
              ? {
                  first: '0x0000000000000000000000000000000000000000000000000000000000000001',
                  last: true,
                }
              : ['0x0000000000000000000000000000000000000000000000000000000000000001', true],
        },
        '0xb06b167500000000000000000000000000000000000000000000000000000000000000010000000000000000000000000000000000000000000000000000000000000001',
      ],
    ),
  ])('%s', async (_name, abi, data, vars, expected) => {
    expect(await runTask('ethabiencode2', { abi, ...(data ? { data } : {}) }, { vars })).toBe(
      expected,
    )
  })
  it.each<[string, string, string, Record<string, unknown>, string]>([
    [
      'number too large for uint32',
      fn('willFail', [{ name: 's', type: 'uint32' }]),
      '{ "s": $(foo) }',
      { foo: 2n ** 63n - 1n },
      'out of range for uint32',
    ],
    [
      'string too large for address',
      fn('willFail', [{ name: 'a', type: 'address' }]),
      '{ "a": $(foo) }',
      { foo: '0xdeadbeefdeadbeefdeadbeefdeadbeefdeadbeefdeadbeef' },
      'expected an address',
    ],
    [
      'no argument names',
      fn('willFail', [{ type: 'address' }, { type: 'uint256[]' }]),
      '',
      {},
      'missing argument name',
    ],
  ])('%s', async (_name, abi, data, vars, message) => {
    const error = await failure(
      runTask('ethabiencode2', { abi, ...(data ? { data } : {}) }, { vars }),
    )
    expect(error.message).toContain(message)
    expect(error.retryable).toBe(false)
  })
})

describe('estimategaslimit (TestEstimateGasLimitTask)', () => {
  const to = '0x5FbDB2315678afecb367f032d93F642f64180aa3'
  const estimating = (gas: bigint | Error) =>
    new RecordingChainAccess(undefined, async () => {
      if (gas instanceof Error) throw gas
      return gas
    })
  it.each<[string, bigint | Error, string | undefined, bigint | undefined, bigint]>([
    ['estimate', 21_000n, undefined, undefined, 21_000n],
    ['estimate times a multiplier, truncated', 21_001n, '1.5', undefined, 31_501n],
    ['over the spec gas limit: the limit', 400_000n, '2', 500_000n, 500_000n],
    [
      'the node cannot estimate: the limit, not a failure',
      new Error('execution reverted'),
      undefined,
      300_000n,
      300_000n,
    ],
  ])('%s', async (_name, gas, multiplier, defaultGasLimit, expected) => {
    const result = await runTask(
      'estimategaslimit',
      { to, data: '0x12', ...(multiplier ? { multiplier } : {}) },
      { context: { chain: estimating(gas), defaultGasLimit } },
    )
    expect(result).toBe(expected)
  })
  it('a task naming another chain than the job is refused', async () => {
    const error = await failure(
      runTask(
        'estimategaslimit',
        { to, data: '0x12', evmChainID: '1' },
        { context: { chain: estimating(1n) }, vars: { jobSpec: { evmChainID: '31337' } } },
      ),
    )
    expect(error.message).toContain('this job runs on chain 31337')
  })
})
