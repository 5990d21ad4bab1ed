import { AbiCoder, getBytes, Interface } from 'ethers'
import { describe, expect, it } from 'vitest'
import { boundOf } from '../../../src/config/index.ts'
import { buildOracleRequest, ORACLE_REQUEST_EVENT, type Vars } from '../../../src/pipeline/index.ts'
import { DEFAULT_PIPELINE_LIMITS } from '../../../src/pipeline/limits.ts'
import { ethabidecode } from '../../../src/pipeline/tasks/ethabidecode.ts'
import { ethabidecodelog } from '../../../src/pipeline/tasks/ethabidecodelog.ts'
import { runTask, taskFailure as refusal } from '../support/task.ts'

// The ABI decoders' edges: how ethabidecode reads its argument list and maps what it decodes (bytes,
// arrays, tuples), and how ethabidecodelog checks a log's data and topics before it decodes them.

const coder = AbiCoder.defaultAbiCoder()
const ADDRESS = '0xe7f1725E7734CE288F8367e1Bb143E90bb3F0512'

describe('ethabidecode: the argument list', () => {
  const decode = (abi: string | undefined, data: unknown) =>
    runTask('ethabidecode', abi === undefined ? {} : { abi }, { inputs: [data] })

  it('takes the list with or without parentheses and spaces around, and drops data locations', async () => {
    const data = coder.encode(['uint256', 'bytes'], [7n, '0x0102'])
    const expected = { price: 7n, blob: new Uint8Array([1, 2]) }
    expect(await decode('uint256 price, bytes blob', data)).toEqual(expected)
    expect(await decode('(uint256 price, bytes memory blob)', data)).toEqual(expected)
    expect(await decode('  (uint256 price, bytes calldata blob)  ', data)).toEqual(expected)
    // A name holding a location's word between two $ is a name: nothing is taken out of it.
    expect(await decode('(uint256 price, bytes a$memory$b)', data)).toEqual({
      price: expected.price,
      a$memory$b: expected.blob,
    })
    // As in Chainlink, a location is dropped wherever it stands: before the type, or after the name.
    expect(await decode('memory uint256 price,calldata bytes blob storage', data)).toEqual(expected)
    // Nothing is taken out of a snake_case name that starts or ends with a location's word.
    expect(await decode('uint256 storage_slot, bytes raw_calldata', data)).toEqual({
      storage_slot: expected.price,
      raw_calldata: expected.blob,
    })
  })

  it('decodes a tuple into a map by component name, by position where a component has none', async () => {
    const data = coder.encode(
      ['uint256', 'tuple(uint256,address)', 'tuple(uint256,bytes32)'],
      [1n, [2n, ADDRESS], [3n, '0x' + 'ab'.repeat(32)]],
    )
    expect(
      await decode(
        'uint256 first, (uint256 amount, address owner) named, (uint256, bytes32) unnamed',
        data,
      ),
    ).toEqual({
      first: 1n,
      named: { amount: 2n, owner: ADDRESS },
      unnamed: { 0: 3n, 1: '0x' + 'ab'.repeat(32) },
    })
  })

  it('gives an array of bytes as bytes, and arrays of tuples as maps', async () => {
    const data = coder.encode(
      ['bytes[]', 'tuple(uint256,bytes)[]'],
      [['0x01', '0x'], [[4n, '0xff']]],
    )
    expect(await decode('bytes[] blobs, (uint256 id, bytes body)[] items', data)).toEqual({
      blobs: [new Uint8Array([1]), new Uint8Array(0)],
      items: [{ id: 4n, body: new Uint8Array([255]) }],
    })
  })

  it('decodes no data to an empty map, with or without an argument list', async () => {
    expect(await decode('uint256 price', '0x')).toEqual({})
    expect(await decode(undefined, '0x')).toEqual({})
    expect(await decode(undefined, '0x' + '00'.repeat(32))).toEqual({})
  })

  it('refuses data it cannot decode, naming the types, and data that is not bytes', async () => {
    const short = await refusal(decode('uint256 price, bytes32 id', '0x01'))
    expect(short.message).toMatch(/^data cannot be decoded as \(uint256, bytes32\): \S/)
    const notBytes = await refusal(
      runTask('ethabidecode', { abi: 'uint256 price', data: '$(d)' }, { vars: { d: 5 } }),
    )
    expect(notBytes.message).toBe('data: expected bytes or a 0x-hex string, got 5')
  })

  it('refuses an argument list it cannot parse, at run time and when the spec is checked', async () => {
    const unparsed = await refusal(decode('uint256 price,,', '0x01'))
    expect(unparsed.message).toMatch(/^abi: not an argument list \(\S/)
    const problems = ethabidecode.check!({ abi: 'uint256 price,,' })
    expect(problems).toEqual([
      {
        attribute: 'abi',
        message: expect.stringMatching(
          /^not an argument list \(.+\); it must be an argument list such as "uint256 price, bytes32 id", each argument named, in Solidity types$/,
        ),
      },
    ])
  })

  it('checks that every argument is named, and takes an empty or missing list', () => {
    expect(ethabidecode.check!({ abi: 'uint256 price, bytes32 id' })).toEqual([])
    expect(ethabidecode.check!({})).toEqual([])
    expect(ethabidecode.check!({ abi: 'uint256' })).toEqual([
      {
        attribute: 'abi',
        message:
          'bad ABI specification, missing argument name (argument 1, uint256); it must be an argument list such as "uint256 price, bytes32 id", each argument named, in Solidity types',
      },
    ])
  })
})

describe('ethabidecodelog: data and topics', () => {
  const TRANSFER = 'Transfer(address indexed from, address indexed to, uint256 value)'
  const iface = new Interface([`event ${TRANSFER}`])
  const topicHash = iface.getEvent('Transfer')!.topicHash
  const word = (hex: string) => '0x' + hex.replace(/^0x/, '').toLowerCase().padStart(64, '0')
  const topics = [topicHash, word(ADDRESS), word('0xcf7ed3acca5a467e9e704c703e8d87f634fb0fc9')]
  const data = coder.encode(['uint256'], [1234n])
  const decodeLog = (attributes: Record<string, string>, vars: Vars, inputs?: unknown[]) =>
    runTask('ethabidecodelog', { abi: TRANSFER, ...attributes }, { vars, inputs })

  it('decodes data given as the first input, and the indexed arguments from the topics', async () => {
    expect(await decodeLog({ topics: '$(t)' }, { t: topics }, [data])).toEqual({
      from: ADDRESS,
      to: '0xCf7Ed3AccA5a467e9e704C703E8D87F634fB0Fc9',
      value: 1234n,
    })
    expect(
      await decodeLog(
        { abi: `  ${TRANSFER}  `, data: '$(d)', topics: '$(t)' },
        { d: data, t: topics },
      ),
    ).toEqual(expect.objectContaining({ value: 1234n }))
  })

  it('refuses topics that are not a list of strings, or whose first is not the event hash', async () => {
    for (const given of [undefined, topicHash, [topicHash, 5, topics[2]]]) {
      const error = await refusal(
        decodeLog({ data: '$(d)', topics: '$(t)' }, { d: data, t: given }),
      )
      expect(error.message).toBe('topics must be an array of 0x-hex strings')
    }
    const none = await refusal(decodeLog({ data: '$(d)', topics: '$(t)' }, { d: data, t: [] }))
    expect(none.message).toBe(
      `topics[0] undefined is not the hash of Transfer(address,address,uint256) (${topicHash})`,
    )
  })

  it('refuses data that is not bytes, naming it', async () => {
    const error = await refusal(decodeLog({ data: '$(d)', topics: '$(t)' }, { d: 5, t: topics }))
    expect(error.message).toBe('data: expected bytes or a 0x-hex string, got 5')
  })

  it('refuses a log too short for the event, naming the event', async () => {
    const error = await refusal(
      decodeLog({ data: '$(d)', topics: '$(t)' }, { d: '0x01', t: topics }),
    )
    expect(error.message).toMatch(
      /^cannot decode the log as Transfer\(address,address,uint256\): \S/,
    )
  })

  it("counts only the data's arguments against DECODE_MAX_NODES, and names the bound when it refuses", async () => {
    const limits = (decodeMaxNodes: number) => ({
      ...DEFAULT_PIPELINE_LIMITS,
      decodeMaxNodes,
    })
    const run = (decodeMaxNodes: number) =>
      runTask(
        'ethabidecodelog',
        { abi: TRANSFER, data: '$(d)', topics: '$(t)' },
        { vars: { d: data, t: topics }, context: { limits: limits(decodeMaxNodes) } },
      )
    expect(await run(1)).toEqual(expect.objectContaining({ value: 1234n }))
    const error = await refusal(run(0))
    expect(error.message).toMatch(
      /^cannot decode the log as Transfer\(address,address,uint256\): data \(ABI\) would build more than 0 values \(DECODE_MAX_NODES\)/,
    )
    expect(boundOf(error)).toBe('DECODE_MAX_NODES')
  })

  it("reads an Operator's OracleRequest log by its layout, without counting its values", async () => {
    const request = buildOracleRequest({
      externalJobID: 'ca98366c-c731-4957-b8c0-12c72f05aeea',
      params: [['a', 'b']],
      callbackFunction: 'fulfillUint256(bytes32,uint256)',
      payment: 5n,
    })
    const decoded = (await runTask(
      'ethabidecodelog',
      { abi: ORACLE_REQUEST_EVENT.replace(/^event /, ''), data: '$(d)', topics: '$(t)' },
      {
        vars: { d: request.log.data, t: request.log.topics },
        context: { limits: { ...DEFAULT_PIPELINE_LIMITS, decodeMaxNodes: 1 } },
      },
    )) as Record<string, unknown>
    expect(decoded.requestId).toBe(request.requestId)
    expect(decoded.data).toEqual(getBytes(request.data))
  })

  it('refuses an event it cannot parse, at run time and when the spec is checked', async () => {
    const error = await refusal(
      decodeLog({ abi: 'Transfer(', topics: '$(t)' }, { t: topics }, [data]),
    )
    expect(error.message).toMatch(/^abi: not an event signature \(\S/)
    const missing = await refusal(runTask('ethabidecodelog', {}, { inputs: [data] }))
    expect(missing.message).toBe('abi: not an event signature (invalid event fragment)')
    expect(ethabidecodelog.check!({})).toEqual([
      {
        attribute: 'abi',
        message:
          'not an event signature (invalid event fragment); it must be an event such as "OracleRequest(bytes32 indexed specId, address requester, ...)", in Solidity types',
      },
    ])
    expect(ethabidecodelog.check!({ abi: 'Transfer(' })).toEqual([
      {
        attribute: 'abi',
        message: expect.stringMatching(
          /^not an event signature \(.+\); it must be an event such as "OracleRequest\(bytes32 indexed specId, address requester, \.\.\.\)", in Solidity types$/,
        ),
      },
    ])
  })
})
