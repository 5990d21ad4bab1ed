import { Encoder } from 'cbor-x'
import fc from 'fast-check'
import { AbiCoder, getBytes, hexlify, Interface } from 'ethers'
import { describe, expect, it } from 'vitest'
import {
  buildOracleRequest,
  encodeRequestParams,
  ORACLE_REQUEST_EVENT,
} from '../../../src/pipeline/index.ts'
import { runTask } from '../support/task.ts'

const body = JSON.stringify({
  data: {
    result: 144,
    items: [{ v: 1 }, { v: 2 }, { v: 3 }],
    'a.b': 'dotted',
    windgust: 9.5,
    nothing: null,
  },
})

describe('jsonparse', () => {
  it('splits on commas by default, so dots stay inside keys', async () => {
    expect(await runTask('jsonparse', { path: 'data,result' }, { inputs: [body] })).toBe(144)
    expect(
      await runTask('jsonparse', { path: 'data,a.b', data: '$(raw)' }, { vars: { raw: body } }),
    ).toBe('dotted')
  })
  it('takes a custom separator', async () => {
    expect(
      await runTask('jsonparse', { path: 'data/items/1/v', separator: '/' }, { inputs: [body] }),
    ).toBe(2)
  })
  it('counts negative indices from the end', async () => {
    expect(await runTask('jsonparse', { path: 'data,items,-1,v' }, { inputs: [body] })).toBe(3)
    await expect(
      runTask('jsonparse', { path: 'data,items,-4,v' }, { inputs: [body] }),
    ).rejects.toThrow('index -4 out of range')
  })
  it('lax gives null for a missing path, strict names it', async () => {
    expect(
      await runTask('jsonparse', { path: 'data,missing', lax: 'true' }, { inputs: [body] }),
    ).toBeNull()
    expect(
      await runTask('jsonparse', { path: 'data,items,9', lax: 'true' }, { inputs: [body] }),
    ).toBeNull()
    await expect(
      runTask('jsonparse', { path: 'data,missing' }, { inputs: [body] }),
    ).rejects.toThrow('path data,missing: no value at "data.missing"')
    expect(await runTask('jsonparse', { path: 'data,nothing' }, { inputs: [body] })).toBeNull()
    // As on a node, lax does not hide a path that does not fit the document.
    await expect(
      runTask('jsonparse', { path: 'data,items,first', lax: 'true' }, { inputs: [body] }),
    ).rejects.toThrow('an array needs an integer index')
    await expect(
      runTask('jsonparse', { path: 'data,result,deeper', lax: 'true' }, { inputs: [body] }),
    ).rejects.toThrow('a number has no fields')
  })
  it('accepts JSONPath and resolves aliases of the run context', async () => {
    expect(await runTask('jsonparse', { path: '$.data.items[-1:].v' }, { inputs: [body] })).toBe(3)
    expect(
      await runTask(
        'jsonparse',
        { path: 'data,windGust' },
        { inputs: [body], context: { aliases: { windGust: ['windgust'] } } },
      ),
    ).toBe(9.5)
    await expect(
      runTask('jsonparse', { path: 'data,windGust' }, { inputs: [body] }),
    ).rejects.toThrow('no value')
  })
  it('refuses data that is not JSON', async () => {
    await expect(runTask('jsonparse', { path: 'a' }, { inputs: ['{oops'] })).rejects.toThrow(
      'data is not JSON',
    )
  })
})

describe('cborparse', () => {
  it('decodes the diet map body Chainlink requests carry, with typed values', async () => {
    const data = encodeRequestParams([
      ['get', 'https://example.com/x'],
      ['path', 'RAW,ETH'],
      ['times', 10n ** 18n],
      ['neg', -5n],
      ['big', 1n << 70n],
      ['list', ['a', 'b']],
    ])
    const decoded = (await runTask(
      'cborparse',
      { data: '$(log.data)' },
      { vars: { log: { data } } },
    )) as Record<string, unknown>
    expect(decoded).toEqual({
      get: 'https://example.com/x',
      path: 'RAW,ETH',
      times: 10n ** 18n,
      neg: -5,
      big: 1n << 70n,
      list: ['a', 'b'],
    })
  })
  it('decodes standard CBOR and bytes input, and an empty diet buffer as an empty map', async () => {
    const standard = new Encoder({ useRecords: false }).encode({ a: 1, b: 'x' })
    expect(
      await runTask('cborparse', { mode: 'standard' }, { inputs: [Uint8Array.from(standard)] }),
    ).toEqual({ a: 1, b: 'x' })
    expect(await runTask('cborparse', {}, { inputs: ['0x'] })).toEqual({})
  })
  it('keeps a parameter named __proto__ as an own key and leaves Object.prototype alone', async () => {
    const decoded = (await runTask(
      'cborparse',
      {},
      {
        inputs: [
          encodeRequestParams([
            ['__proto__', 'x'],
            ['constructor', 'y'],
          ]),
        ],
      },
    )) as Record<string, unknown>
    expect(Object.keys(decoded)).toEqual(['__proto__', 'constructor'])
    expect(Object.getOwnPropertyDescriptor(decoded, '__proto__')?.value).toBe('x')
    expect(Object.getPrototypeOf(decoded)).toBe(Object.prototype)
    expect(({} as Record<string, unknown>).x).toBeUndefined()
  })
  it('refuses broken CBOR with a clear error', async () => {
    await expect(runTask('cborparse', {}, { inputs: ['0x63676574'] })).rejects.toThrow(
      'data is not valid CBOR (diet)',
    )
    await expect(runTask('cborparse', { mode: 'fancy' }, { inputs: ['0x'] })).rejects.toThrow(
      'mode must be diet or standard',
    )
  })
})

describe('ethabidecodelog', () => {
  it('decodes an OracleRequest log with typed fields', async () => {
    const request = buildOracleRequest({
      externalJobID: 'ca98366c-c731-4957-b8c0-12c72f05aeea',
      params: [['a', 'b']],
      callbackFunction: 'fulfillUint256(bytes32,uint256)',
      payment: 5n,
    })
    const abi = ORACLE_REQUEST_EVENT.replace(/^event /, '')
    const decoded = (await runTask(
      'ethabidecodelog',
      { abi, data: '$(jobRun.logData)', topics: '$(jobRun.logTopics)' },
      { vars: { jobRun: { logData: request.log.data, logTopics: request.log.topics } } },
    )) as Record<string, unknown>
    expect(decoded.specId).toBe(request.specId)
    expect(decoded.requestId).toBe(request.requestId)
    expect(decoded.payment).toBe(5n)
    expect(decoded.callbackFunctionId).toBe(
      new Interface(['function fulfillUint256(bytes32,uint256)']).getFunction('fulfillUint256')!
        .selector,
    )
    expect(hexlify(decoded.data as Uint8Array)).toBe(request.data)
  })
  it('decodes any OracleRequest log as ethers alone does, or fails as it fails', async () => {
    // The task reads the Operator's own layout by slicing (src/chain/oracle-request-data.ts).
    const abi = ORACLE_REQUEST_EVENT.replace(/^event /, '')
    const iface = new Interface([ORACLE_REQUEST_EVENT])
    const topics = [iface.getEvent('OracleRequest')!.topicHash, '0x' + '3a'.repeat(32)]
    const values = fc.tuple(
      fc.uint8Array({ minLength: 20, maxLength: 20 }).map(hexlify),
      fc.uint8Array({ minLength: 32, maxLength: 32 }).map(hexlify),
      fc.bigInt({ min: 0n, max: 2n ** 256n - 1n }),
      fc.uint8Array({ minLength: 4, maxLength: 4 }).map(hexlify),
      fc.uint8Array({ maxLength: 200 }).map(hexlify),
      fc.nat(900),
      fc.constantFrom('', '0', '7', 'x'),
    )
    await fc.assert(
      fc.asyncProperty(values, async ([address, word, amount, selector, bytes, at, digit]) => {
        const encoded = AbiCoder.defaultAbiCoder().encode(
          ['address', 'bytes32', 'uint256', 'address', 'bytes4', 'uint256', 'uint256', 'bytes'],
          [address, word, amount, address, selector, amount, amount, bytes],
        )
        const place = 2 + (at % (encoded.length - 2))
        const data =
          digit === '' ? encoded : encoded.slice(0, place) + digit + encoded.slice(place + 1)
        const expected = (() => {
          try {
            const decoded = iface.decodeEventLog('OracleRequest', data, topics)
            return Object.fromEntries(
              iface
                .getEvent('OracleRequest')!
                .inputs.map((input, index) => [
                  input.name,
                  input.type === 'bytes' ? getBytes(decoded[index] as string) : decoded[index],
                ]),
            )
          } catch {
            return 'error'
          }
        })()
        const got = await runTask(
          'ethabidecodelog',
          { abi, data: '$(d)', topics: '$(t)' },
          { vars: { d: data, t: topics } },
        ).catch(() => 'error')
        expect(got).toEqual(expected)
      }),
      { numRuns: 400 },
    )
  })
  it('refuses a log of another event', async () => {
    const abi = ORACLE_REQUEST_EVENT.replace(/^event /, '')
    const topics = ['0x' + '11'.repeat(32), '0x' + '22'.repeat(32)]
    await expect(
      runTask('ethabidecodelog', { abi, data: '0x', topics: '$(t)' }, { vars: { t: topics } }),
    ).rejects.toThrow('is not the hash of OracleRequest')
  })
})

describe('ethabiencode', () => {
  const coder = AbiCoder.defaultAbiCoder()
  const requestId = '0x' + 'ab'.repeat(32)
  it('encodes arguments with typed values unquoted, integers truncated toward zero', async () => {
    const vars = { id: requestId, v: '2.9', neg: -2.9 }
    const encoded = await runTask(
      'ethabiencode',
      {
        abi: '(bytes32 requestId, uint256 value, int256 signed)',
        data: '{"requestId": $(id), "value": $(v), "signed": $(neg)}',
      },
      { vars },
    )
    expect(encoded).toBe(coder.encode(['bytes32', 'uint256', 'int256'], [requestId, 2n, -2n]))
  })
  it('adds the selector for fn(...) and handles bool, string, address, bytes', async () => {
    const vars = {
      flag: 'true',
      name: 'Man United',
      who: '0xe7f1725e7734ce288f8367e1bb143e90bb3f0512',
      blob: 'hi',
    }
    const abi = 'store(bool flag, string name, address who, bytes blob)'
    const encoded = await runTask(
      'ethabiencode',
      { abi, data: '{"flag": $(flag), "name": $(name), "who": $(who), "blob": $(blob)}' },
      { vars },
    )
    const iface = new Interface([`function ${abi}`])
    expect(encoded).toBe(
      iface.encodeFunctionData('store', [
        true,
        'Man United',
        '0xe7f1725E7734CE288F8367e1Bb143E90bb3F0512',
        '0x6869',
      ]),
    )
  })
  it('names the argument that is wrong', async () => {
    await expect(
      runTask('ethabiencode', { abi: '(uint256 value)', data: '{"value": -1}' }),
    ).rejects.toThrow('data.value: -1 is out of range for uint256')
    await expect(
      runTask('ethabiencode', { abi: '(uint8 value)', data: '{"value": 256}' }),
    ).rejects.toThrow('out of range for uint8')
    await expect(runTask('ethabiencode', { abi: '(uint256 value)', data: '{}' })).rejects.toThrow(
      'no value for argument value',
    )
    await expect(
      runTask('ethabiencode', { abi: '(bytes32 id)', data: '{"id": "0x1234"}' }),
    ).rejects.toThrow('expected 32 bytes, got 2')
    await expect(
      runTask('ethabiencode', { abi: '(bytes4 id)', data: '{"id": "abc"}' }),
    ).rejects.toThrow('text of exactly 4 bytes')
    expect(await runTask('ethabiencode', { abi: '(bytes4 id)', data: '{"id": "abcd"}' })).toBe(
      coder.encode(['bytes4'], ['0x61626364']),
    )
    await expect(
      runTask('ethabiencode', { abi: '(uint256 value)', data: '{"value": $(missing)}' }),
    ).rejects.toThrow('data: $(missing)')
  })
})
