import { isIP } from 'node:net'
import { describe, expect, it } from 'vitest'
import { FeedrunnerError } from '../../src/config/errors.ts'
import { declaredLength, nestingBeyond, readBounded, utf8Text } from '../../src/net/bounded-body.ts'
import { DecodeBudgetError, NodeBudget, stringNodes } from '../../src/net/decode-budget.ts'
import { hostAddressOf, interfaceAddresses } from '../../src/net/host-addresses.ts'
import { isEveryInterface, isLoopbackHost, listenAddress } from '../../src/net/listen-address.ts'
import { plainAddress, SPECIAL_RANGES, specialRangeOf } from '../../src/net/special-addresses.ts'
import { sampleOf } from './ranges.ts'

// The edges of src/net one function at a time: exact caps, exact counts, each form of an address.
// test/pipeline/tasks/network-guard.test.ts and decode-bounds.test.ts hold them end to end.

async function* chunks(...parts: string[]): AsyncIterable<Uint8Array> {
  for (const part of parts) yield Buffer.from(part)
}

describe('readBounded', () => {
  it('reads a body of exactly the cap, in order, and stops one byte past it', async () => {
    const whole = await readBounded(chunks('ab', 'cd', 'e'), 5)
    expect(whole.ok && whole.bytes.toString()).toBe('abcde')
    expect(await readBounded(chunks('ab', 'cd', 'ef'), 5)).toEqual({ ok: false, received: 6 })
  })

  it('stops at the chunk that crosses the cap, not after the body', async () => {
    let pulled = 0
    async function* endless(): AsyncIterable<Uint8Array> {
      for (;;) {
        pulled++
        yield Buffer.alloc(4)
      }
    }
    expect(await readBounded(endless(), 10)).toEqual({ ok: false, received: 12 })
    expect(pulled).toBe(3)
  })

  it('takes no body as an empty one', async () => {
    for (const body of [null, undefined]) {
      const read = await readBounded(body, 0)
      expect(read.ok && read.bytes.length).toBe(0)
    }
  })
})

describe('utf8Text and declaredLength', () => {
  it('decodes UTF-8, drops a BOM, and refuses bytes that are not UTF-8', () => {
    expect(utf8Text(Buffer.from('\u00e9t\u00e9'))).toBe('\u00e9t\u00e9')
    expect(utf8Text(Buffer.from([0xef, 0xbb, 0xbf, 0x7b, 0x7d]))).toBe('{}')
    expect(utf8Text(Buffer.from([0x7b, 0xff, 0x7d]))).toBeUndefined()
  })

  it('reads a content-length of digits only, the first of several', () => {
    expect(declaredLength('42')).toBe(42)
    expect(declaredLength(' 42 ')).toBe(42)
    expect(declaredLength(['7', '9'])).toBe(7)
    for (const header of [undefined, null, '', '4x2', '-1', '1.5', 'x42', '42x'])
      expect(declaredLength(header), String(header)).toBeUndefined()
  })
})

describe('nestingBeyond', () => {
  it('returns where the nesting first passes the bound, and nothing at the bound', () => {
    expect(nestingBeyond('[[]]', 2)).toBeUndefined()
    expect(nestingBeyond('[[[]]]', 2)).toBe(2)
    expect(nestingBeyond('{"a":{"b":[]}}', 2)).toBe(10)
    // Closing brackets count down: siblings never add up.
    expect(nestingBeyond('[[],[],[]]', 2)).toBeUndefined()
    expect(nestingBeyond('{}{}{}', 1)).toBeUndefined()
  })

  it('skips brackets inside strings, escaped quotes included', () => {
    expect(nestingBeyond('["[[[[", "{{{{"]', 1)).toBeUndefined()
    expect(nestingBeyond('["\\"[[[[", 1]', 1)).toBeUndefined()
    expect(nestingBeyond('["\\\\", [1]]', 1)).toBe(7)
  })

  it('counts every value the parse would build against a budget', () => {
    const count = (text: string) => {
      const budget = new NodeBudget(1_000, 'the body (JSON)')
      expect(nestingBeyond(text, 10, budget)).toBeUndefined()
      return budget.count
    }
    // An array and three scalars: a number with sign, fraction and exponent is one value.
    expect(count('[-12.5e+3, true, null]')).toBe(4)
    expect(count('[1E-5,false]')).toBe(3)
    // An object, a key and a value; a string one more per 32 bytes.
    expect(count('{"a":0}')).toBe(3)
    expect(count(`["${'x'.repeat(31)}"]`)).toBe(2)
    expect(count(`["${'x'.repeat(32)}"]`)).toBe(3)
    expect(count(`["${'x'.repeat(64)}"]`)).toBe(4)
    // Separators and white space build nothing.
    expect(count(' [ ] ')).toBe(1)
    expect(count('[9,8]')).toBe(3)
    expect(count('[9 ,8]')).toBe(3)
    // Every digit continues a number; a colon, spaces and brackets never do.
    expect(count('[100, 99, 0]')).toBe(4)
    expect(count('{"a": 0, "b": false}')).toBe(5)
    // An unterminated string counts up to the end of the text.
    expect(count(`["${'x'.repeat(31)}`)).toBe(2)
  })

  it('closes the brackets that end a scalar, with a budget as without', () => {
    const budget = () => new NodeBudget(1_000, 'the body (JSON)')
    expect(nestingBeyond('[[1],[2],[3]]', 2, budget())).toBeUndefined()
    expect(nestingBeyond('[{"a":true},{"b":null}]', 2, budget())).toBeUndefined()
  })

  it('throws the budget error past the budget, and builds nothing without one', () => {
    const budget = new NodeBudget(5, 'the body (JSON)')
    expect(() => nestingBeyond('[[],[],[],[],[]]', 10, budget)).toThrow(DecodeBudgetError)
    expect(nestingBeyond('[1,2,3,4,5,6,7,8]', 10)).toBeUndefined()
  })
})

describe('NodeBudget', () => {
  it('takes up to its maximum and refuses the next node', () => {
    const budget = new NodeBudget(3, 'data (CBOR)')
    budget.take()
    budget.take(2)
    expect(budget.count).toBe(3)
    expect(() => budget.take()).toThrow(DecodeBudgetError)
    const strings = new NodeBudget(2, 'data (CBOR)')
    strings.takeString(32)
    expect(strings.count).toBe(2)
    expect(() => strings.takeString(0)).toThrow(DecodeBudgetError)
  })

  it('counts a string one node, and one more per full 32 bytes', () => {
    expect([0, 1, 31, 32, 63, 64, 100].map(stringNodes)).toEqual([1, 1, 1, 2, 2, 3, 4])
  })

  it('names what was decoded, the bound and its setting, as bad input', () => {
    const error = new DecodeBudgetError('the log (ABI)', 100)
    expect(error).toBeInstanceOf(FeedrunnerError)
    expect(error.name).toBe('DecodeBudgetError')
    expect(error.kind).toBe('bad_input')
    expect(error.bound).toBe('DECODE_MAX_NODES')
    expect(error.message).toBe(
      'the log (ABI) would build more than 100 values (DECODE_MAX_NODES); it was refused before they were built',
    )
    expect([error.what, error.max]).toEqual(['the log (ABI)', 100])
  })
})

describe('host addresses', () => {
  it("lists this host's interfaces, loopback among them", () => {
    const own = interfaceAddresses()
    expect(own.map((entry) => entry.address)).toContain('127.0.0.1')
    expect(own.every((entry) => isIP(entry.address) > 0 && entry.interface.length > 0)).toBe(true)
  })

  it('matches an address in any of its written forms, in its own family only', () => {
    const own = [
      { address: 'not an address', interface: 'odd0' },
      { address: '::ffff:10.0.0.5', interface: 'mapped0' },
      { address: '10.0.0.5', interface: 'eth0' },
      { address: 'fe80::1%eth1', interface: 'eth1' },
      { address: '::1', interface: 'lo' },
    ]
    expect(hostAddressOf('10.0.0.5', own)?.interface).toBe('eth0')
    expect(hostAddressOf('0:0::1', own)?.interface).toBe('lo')
    expect(hostAddressOf('[::1]', own)?.interface).toBe('lo')
    expect(hostAddressOf('fe80::1', own)?.interface).toBe('eth1')
    expect(hostAddressOf('::ffff:10.0.0.5', own)?.interface).toBe('mapped0')
    expect(hostAddressOf('10.0.0.6', own)).toBeUndefined()
    expect(hostAddressOf('not an address', own)).toBeUndefined()
    expect(hostAddressOf('10.0.0.5', [])).toBeUndefined()
  })
})

describe('listen addresses', () => {
  it('knows loopback in every form and nothing else', () => {
    for (const host of ['localhost', 'LocalHost', '::1', '[::1]', '127.0.0.1', '127.9.8.7'])
      expect(isLoopbackHost(host), host).toBe(true)
    expect(isLoopbackHost('::ffff:127.0.0.1')).toBe(true)
    expect(isLoopbackHost('[::FFFF:127.0.0.2]')).toBe(true)
    for (const host of [
      '128.0.0.1',
      '127.example.com',
      '::2',
      '0.0.0.0',
      '::ffff:10.0.0.1',
      'x127.0.0.1',
    ])
      expect(isLoopbackHost(host), host).toBe(false)
  })

  it('takes off brackets only around the host', () => {
    for (const host of ['12]7.0.0.1', '12[7.0.0.1', '[127.0.0.1]x'])
      expect(isLoopbackHost(host), host).toBe(false)
    for (const host of ['0.0.0.[0', '0.0.0.]0']) expect(isEveryInterface(host), host).toBe(false)
    expect(listenAddress('12]7.0.0.1', 80).listening).toBe('http://12]7.0.0.1:80')
    expect(listenAddress('12[7.0.0.1', 80).listening).toBe('http://12[7.0.0.1:80')
    for (const address of ['12]7.0.0.1', '12[7.0.0.1'])
      expect(specialRangeOf(address), address).toBeUndefined()
  })

  it('knows every interface in both families', () => {
    for (const host of ['0.0.0.0', '::', '[::]', '0:0:0:0:0:0:0:0'])
      expect(isEveryInterface(host), host).toBe(true)
    for (const host of ['::1', '127.0.0.1', '0.0.0.1', 'a::', '[::1]'])
      expect(isEveryInterface(host), host).toBe(false)
  })

  it('gives the bound address, the URL a local process uses, and whether only this host reaches it', () => {
    expect(listenAddress('0.0.0.0', 8080)).toEqual({
      listening: 'http://0.0.0.0:8080',
      url: 'http://127.0.0.1:8080',
      loopback: false,
    })
    expect(listenAddress('[::]', 8080)).toEqual({
      listening: 'http://[::]:8080',
      url: 'http://127.0.0.1:8080',
      loopback: false,
    })
    expect(listenAddress('::1', 9)).toEqual({
      listening: 'http://[::1]:9',
      url: 'http://[::1]:9',
      loopback: true,
    })
    expect(listenAddress('127.0.0.1', 80)).toEqual({
      listening: 'http://127.0.0.1:80',
      url: 'http://127.0.0.1:80',
      loopback: true,
    })
    expect(listenAddress('10.1.2.3', 80).loopback).toBe(false)
  })
})

describe('special-purpose addresses', () => {
  it('holds every row of both registries: 26 IPv4 prefixes (25 records), 25 IPv6, 5 beyond', () => {
    const count = (registry: string) =>
      SPECIAL_RANGES.filter((range) => range.registry === registry).length
    expect([count('IANA IPv4'), count('IANA IPv6'), count('beyond the registries')]).toEqual([
      26, 25, 5,
    ])
  })

  it('finds each row for an address inside it', () => {
    for (const range of SPECIAL_RANGES)
      expect(specialRangeOf(sampleOf(range.prefix)), range.prefix).toEqual(range)
  })

  it('names every row by its registry entry and RFC, in the family of its prefix', () => {
    for (const range of SPECIAL_RANGES) {
      const [network, bits] = range.prefix.split('/') as [string, string]
      expect(range.name.length, range.prefix).toBeGreaterThan(2)
      expect(range.rfc, range.prefix).toMatch(/^RFC \d{3,4}$/)
      expect(Number(bits)).toBeLessThanOrEqual(isIP(network) === 4 ? 32 : 128)
      if (range.registry === 'IANA IPv4') expect(isIP(network), range.prefix).toBe(4)
      if (range.registry === 'IANA IPv6') expect(isIP(network), range.prefix).toBe(6)
    }
  })

  it('plain addresses drop brackets and a zone, and refuse what is not an address', () => {
    expect(plainAddress('[fe80::1%eth0]')).toEqual({ address: 'fe80::1', family: 'ipv6' })
    expect(plainAddress('fe80::1%25eth0')).toEqual({ address: 'fe80::1', family: 'ipv6' })
    expect(plainAddress('192.0.2.1')).toEqual({ address: '192.0.2.1', family: 'ipv4' })
    expect(plainAddress('example.com')).toBeUndefined()
    expect(plainAddress('x[::1]')).toBeUndefined()
    expect(plainAddress('[::1]x')).toBeUndefined()
  })

  it('picks the most specific row whatever their order', () => {
    expect(specialRangeOf('192.0.0.9')?.name).toBe('Port Control Protocol Anycast')
    expect(specialRangeOf('192.0.0.100')?.name).toBe('IETF Protocol Assignments')
    expect(specialRangeOf('0.0.0.0')?.prefix).toBe('0.0.0.0/32')
    expect(specialRangeOf('0.1.2.3')?.prefix).toBe('0.0.0.0/8')
    expect(specialRangeOf('::')?.prefix).toBe('::/128')
    expect(specialRangeOf('::5')?.prefix).toBe('::/96')
    expect(specialRangeOf('2001:1::1')?.prefix).toBe('2001:1::1/128')
    expect(specialRangeOf('2001:0:1::1')?.prefix).toBe('2001::/32')
    expect(specialRangeOf('[fe80::1%eth0]')?.prefix).toBe('fe80::/10')
    expect(specialRangeOf('::ffff:8.8.8.8')?.prefix).toBe('::ffff:0:0/96')
  })

  it('names no row for a public address or a name', () => {
    for (const address of ['8.8.8.8', '2606:4700:4700::1111', 'localhost', ''])
      expect(specialRangeOf(address), address).toBeUndefined()
  })
})
