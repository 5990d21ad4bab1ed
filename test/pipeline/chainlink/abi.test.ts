import { getAddress, hexlify, toUtf8Bytes, zeroPadBytes } from 'ethers'
import { describe, expect, it } from 'vitest'
import { toPlain } from '../../../src/pipeline/index.ts'
import { runTask } from '../support/task.ts'

// Chainlink's cases for ethabiencode, ethabidecodelog, cborparse, any, lowercase and uppercase
// (core/services/pipeline/task.<type>_test.go) as table tests. Go's [32]byte, []byte and
// common.Address inputs are bytes or 0x-hex strings here.

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

const U_B_I_S =
  '000000000000000000000000000000000000000000000000000000000000007b0000000000000000000000000000000000000000000000000000000000000001fffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffebf0000000000000000000000000000000000000000000000000000000000000080000000000000000000000000000000000000000000000000000000000000000b666f6f206261722062617a000000000000000000000000000000000000000000'
const BYTES32 = zeroPadBytes(toUtf8Bytes('chainlink chainlink chainlink'), 32)
const DEADBEEF = '0xdeadbeefdeadbeefdeadbeefdeadbeefdeadbeef'

describe('ethabiencode (TestETHABIEncodeTask)', () => {
  it.each<[string, string, string, Record<string, unknown>, string]>([
    [
      'unusual characters in method name / uint256, bool, int256, string',
      'foo_Bar__3928 ( uint256 u, bool b, int256 i, string s )',
      '{ "u": $(foo), "b": $(bar), "i": $(baz), "s": $(quux) }',
      { foo: 123n, bar: true, baz: -321n, quux: 'foo bar baz' },
      `0xae506917${U_B_I_S}`,
    ],
    ...[
      ['bytes32, bytes, address', new Uint8Array(Buffer.from(BYTES32.slice(2), 'hex'))],
      ['bytes32 (hex), bytes, address', BYTES32],
    ].map(([name, bytes32]): [string, string, string, Record<string, unknown>, string] => [
      name as string,
      'asdf(bytes32 b, bytes bs, address a)',
      '{ "b": $(foo), "bs": $(bar), "a": $(baz) }',
      { foo: bytes32, bar: toUtf8Bytes('stevetoshi sergeymoto'), baz: getAddress(DEADBEEF) },
      '0x4f5e7a89636861696e6c696e6b20636861696e6c696e6b20636861696e6c696e6b0000000000000000000000000000000000000000000000000000000000000000000060000000000000000000000000deadbeefdeadbeefdeadbeefdeadbeefdeadbeef00000000000000000000000000000000000000000000000000000000000000157374657665746f736869207365726765796d6f746f0000000000000000000000',
    ]),
    [
      'bool[2][] calldata, uint96[2][] calldata',
      'arrayOfArrays(bool[2][] calldata bools, uint96[2][] calldata uints)',
      '{ "bools": $(foo), "uints": $(bar) }',
      {
        foo: [
          [true, false],
          [false, true],
          [false, false],
          [true, true],
        ],
        bar: [
          [123n, 456n],
          [22n, 19842n],
        ],
      },
      '0xb04bee77000000000000000000000000000000000000000000000000000000000000004000000000000000000000000000000000000000000000000000000000000001600000000000000000000000000000000000000000000000000000000000000004000000000000000000000000000000000000000000000000000000000000000100000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000100000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000100000000000000000000000000000000000000000000000000000000000000010000000000000000000000000000000000000000000000000000000000000002000000000000000000000000000000000000000000000000000000000000007b00000000000000000000000000000000000000000000000000000000000001c800000000000000000000000000000000000000000000000000000000000000160000000000000000000000000000000000000000000000000000000000004d82',
    ],
    ['no args', 'noArgs()', '', {}, '0x83c962bb'],
    [
      'hex string to fixed size byte array (fulfillOracleRequest(..., bytes32 data))',
      'asdf(bytes32 b)',
      '{ "b": $(foo)}',
      { foo: '0x0000000000000000000000000000000000000000000000000000000000000001' },
      '0x628507ac0000000000000000000000000000000000000000000000000000000000000001',
    ],
  ])('%s', async (_name, abi, data, vars, expected) => {
    expect(await runTask('ethabiencode', { abi, ...(data ? { data } : {}) }, { vars })).toBe(
      expected,
    )
  })

  it.each<[string, string, string, Record<string, unknown>, string]>([
    [
      'number too large for uint32',
      'willFail(uint32 s)',
      '{ "s": $(foo) }',
      { foo: 2n ** 63n - 1n },
      'out of range',
    ],
    [
      'string too large for address',
      'willFail(address a)',
      '{ "a": $(foo) }',
      { foo: `${DEADBEEF}deadbeef` },
      'expected an address',
    ],
    [
      'too many array elements',
      'willFail(uint32[2] a)',
      '{ "a": $(foo) }',
      { foo: [123, 456, 789] },
      'expected 2 elements',
    ],
    [
      'too many array elements (nested)',
      'willFail(uint32[2][] a)',
      '{ "a": $(foo) }',
      { foo: [[123, 456, 789]] },
      'expected 2 elements',
    ],
    ['no argument names', 'willFail(address, uint256[])', '', {}, 'missing argument name'],
    [
      'no argument names (calldata)',
      'willFail(uint256[] calldata)',
      '',
      {},
      'missing argument name',
    ],
  ])('%s', async (_name, abi, data, vars, message) => {
    const error = await failure(
      runTask('ethabiencode', { abi, ...(data ? { data } : {}) }, { vars }),
    )
    expect(error.message).toContain(message)
    expect(error.retryable).toBe(false)
  })

  // TestETHABIEncode_EncodeIntegers: 1 as every integer width, and one past int8.
  it.each([
    ['int8', '0xa8d7f3cd'],
    ['uint8', '0x6b377be2'],
    ['int16', '0xabd19546'],
    ['uint16', '0x8f3294d2'],
    ['int24', '0xfdc8ca19'],
    ['uint24', '0xd3f78f38'],
    ['int32', '0x5124903a'],
    ['uint32', '0xeea24d60'],
    ['int40', '0x8fdcab05'],
    ['uint40', '0xcb53df3b'],
    ['int48', '0xeeab50db'],
    ['uint48', '0x2d4a67fd'],
    ['int56', '0x5f4d3642'],
    ['uint56', '0xfe0d590c'],
    ['int64', '0x9089b418'],
    ['uint64', '0x23764370'],
    ['int96', '0x7d14efc0'],
    ['uint96', '0x60517160'],
    ['int128', '0x633a6709'],
    ['uint128', '0x8209afa1'],
  ])('encode 1 to %s', async (type, selector) => {
    const encoded = await runTask(
      'ethabiencode',
      { abi: `asdf(${type} i)`, data: '{ "i": $(foo) }' },
      { vars: { foo: 1 } },
    )
    expect(encoded).toBe(`${selector}${'0'.repeat(63)}1`)
  })
  it('129 does not fit int8', async () => {
    const error = await failure(
      runTask(
        'ethabiencode',
        { abi: 'asdf(int8 i)', data: '{ "i": $(foo) }' },
        { vars: { foo: 129 } },
      ),
    )
    expect(error.message).toContain('out of range for int8')
  })
})

const ORACLE_REQUEST_DATA =
  '0x000000000000000000000000deadbeefdeadbeefdeadbeefdeadbeefdeadbeef74686520726571756573742069640000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000020a6e000000000000000000000000cafebabecafebabecafebabecafebabecafebabe61736466000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000003039000000000000000000000000000000000000000000000000000000000000d431000000000000000000000000000000000000000000000000000000000000010000000000000000000000000000000000000000000000000000000000000000147374657665746f7368692073657267616d6f746f000000000000000000000000'
const ORACLE_REQUEST_ABI =
  'OracleRequest(bytes32 indexed specId, address requester, bytes32 requestId, uint256 payment, address callbackAddr, bytes4 callbackFunctionId, uint256 cancelExpiration, uint256 dataVersion, bytes data)'
const ORACLE_REQUEST_TOPIC = '0xd8d7ecc4800d25fa53ce0372f13a416d98907a7ef3d8d3bdd79cf4fe75529c65'
const JOB_ID_TOPIC = '0x746865206a6f6220696400000000000000000000000000000000000000000000'

describe('ethabidecodelog (TestETHABIDecodeLogTask)', () => {
  const decode = (abi: string, data: string, topics: string[]) =>
    runTask(
      'ethabidecodelog',
      { abi, data: '$(foo.data)', topics: '$(foo.topics)' },
      { vars: { foo: { data, topics } } },
    )

  it('AggregatorV2V3#NewRound', async () => {
    const decoded = await decode(
      'NewRound(uint256 indexed roundId, address indexed startedBy, uint256 startedAt)',
      '0x000000000000000000000000000000000000000000000000000000000000000f',
      [
        '0x0109fc6f55cf40689f02fbaad7af7fe7bbac8a3d2186600afc7d3e10cac60271',
        '0x0000000000000000000000000000000000000000000000000000000000000009',
        '0x000000000000000000000000f17f52151ebef6c7334fad080c5704d77216b732',
      ],
    )
    expect(decoded).toEqual({
      roundId: 9n,
      startedBy: getAddress('0xf17f52151ebef6c7334fad080c5704d77216b732'),
      startedAt: 15n,
    })
  })
  it('Operator#OracleRequest', async () => {
    const decoded = await decode(ORACLE_REQUEST_ABI, ORACLE_REQUEST_DATA, [
      ORACLE_REQUEST_TOPIC,
      JOB_ID_TOPIC,
    ])
    expect(toPlain(decoded)).toEqual({
      specId: JOB_ID_TOPIC,
      requester: getAddress(DEADBEEF),
      requestId: zeroPadBytes(toUtf8Bytes('the request id'), 32),
      payment: '133742',
      callbackAddr: getAddress('0xcafebabecafebabecafebabecafebabecafebabe'),
      callbackFunctionId: hexlify(toUtf8Bytes('asdf')),
      cancelExpiration: '12345',
      dataVersion: '54321',
      data: hexlify(toUtf8Bytes('stevetoshi sergamoto')),
    })
  })
  it('Operator#AuthorizedSendersChanged', async () => {
    const decoded = await decode(
      'AuthorizedSendersChanged(address[] senders)',
      '0x00000000000000000000000000000000000000000000000000000000000000200000000000000000000000000000000000000000000000000000000000000002000000000000000000000000deadbeefdeadbeefdeadbeefdeadbeefdeadbeef000000000000000000000000cafebabecafebabecafebabecafebabecafebabe',
      ['0xe720bc96024900ba647b8faa27766eb59f72cadf3c7ec34a7365c999f78320db'],
    )
    expect(decoded).toEqual({
      senders: [getAddress(DEADBEEF), getAddress('0xcafebabecafebabecafebabecafebabecafebabe')],
    })
  })
  it.each([
    ['missing arg name', 'SomeEvent(bytes32)', [ORACLE_REQUEST_TOPIC], 'missing argument name'],
    [
      'missing arg name (with indexed modifier)',
      'SomeEvent(bytes32 indexed)',
      [ORACLE_REQUEST_TOPIC],
      'missing argument name',
    ],
    ['missing topic data', ORACLE_REQUEST_ABI, [ORACLE_REQUEST_TOPIC], 'cannot decode the log'],
  ])('%s', async (_name, abi, topics, message) => {
    const error = await failure(decode(abi, ORACLE_REQUEST_DATA, topics))
    expect(error.message).toContain(message)
    expect(error.retryable).toBe(false)
  })
  it('not enough data', async () => {
    const error = await failure(
      decode(ORACLE_REQUEST_ABI, ORACLE_REQUEST_DATA.slice(0, 2 + 250 * 2), [
        ORACLE_REQUEST_TOPIC,
        JOB_ID_TOPIC,
      ]),
    )
    expect(error.message).toContain('cannot decode the log')
  })
})

describe('cborparse (TestCBORParseTask)', () => {
  const parse = (data: unknown) => runTask('cborparse', { data: '$(foo)' }, { vars: { foo: data } })
  const hello =
    '0xbf6375726c781a68747470733a2f2f657468657270726963652e636f6d2f61706964706174689f66726563656e7463757364ffff'
  it.each([
    ['hello world', hello],
    ['trailing empty bytes', `${hello}000000`],
  ])('%s', async (_name, data) => {
    expect(await parse(data)).toEqual({
      path: ['recent', 'usd'],
      url: 'https://etherprice.com/api',
    })
  })
  it('nested maps', async () => {
    expect(
      await parse(
        '0xbf657461736b739f6868747470706f7374ff66706172616d73bf636d73676f68656c6c6f5f636861696e6c696e6b6375726c75687474703a2f2f6c6f63616c686f73743a36363930ffff',
      ),
    ).toEqual({
      params: { msg: 'hello_chainlink', url: 'http://localhost:6690' },
      tasks: ['httppost'],
    })
  })
  it('bignums', async () => {
    const data = `0xbf67${Buffer.from('bignums').toString('hex')}9fc25820${'0'.repeat(47)}10000000000000000c25820${'4'}${'0'.repeat(63)}c35820${'0'.repeat(47)}10000000000000000c35820${'3'}${'f'.repeat(63)}ffff`
    expect(await parse(data)).toEqual({
      bignums: [
        18446744073709551616n,
        28948022309329048855892746252171976963317496166410141009864396001978282409984n,
        -18446744073709551617n,
        -28948022309329048855892746252171976963317496166410141009864396001978282409984n,
      ],
    })
  })
  it('empty data is an empty map', async () => {
    expect(await parse(null)).toEqual({})
  })
})

describe('any (TestAnyTask), lowercase and uppercase (TestLowercaseTask, TestUppercaseTask)', () => {
  it.each<[string, unknown[], string[], unknown]>([
    ['one non-errored string input', ['42'], [], '42'],
    ['one errored input and one non-errored input', ['42'], ['foo'], '42'],
    ['two non-errored inputs with one errored input', ['42', '42'], ['foo'], '42'],
  ])('any: %s', async (_name, inputs, failedInputs, expected) => {
    expect(await runTask('any', {}, { inputs, failedInputs })).toBe(expected)
  })
  it('any: zero inputs and only errored inputs fail', async () => {
    await failure(runTask('any', {}))
    await failure(runTask('any', {}, { failedInputs: ['bar', 'foo'] }))
  })
  it.each([
    ['uppercase string', 'UPPERCASE', 'uppercase', 'UPPERCASE'],
    ['camelCase string', 'camelCase', 'camelcase', 'CAMELCASE'],
    ['PascalCase string', 'PascalCase', 'pascalcase', 'PASCALCASE'],
    ['mixed string', 'mIxEd', 'mixed', 'MIXED'],
    ['lowercase string', 'lowercase', 'lowercase', 'LOWERCASE'],
    ['empty string', '', '', ''],
  ])('%s', async (_name, input, lower, upper) => {
    for (const [type, expected] of [
      ['lowercase', lower],
      ['uppercase', upper],
    ] as const) {
      expect(await runTask(type, {}, { inputs: [input] })).toBe(expected)
      expect(await runTask(type, { input: '$(foo.bar)' }, { vars: { foo: { bar: input } } })).toBe(
        expected,
      )
      if (input !== '') expect(await runTask(type, { input })).toBe(expected)
    }
  })
})
