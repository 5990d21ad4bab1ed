import { specialRangeOf } from '../../src/net/special-addresses.ts'

// Addresses inside the special-purpose ranges, for the tests of the table and of the http task's guard.

/**
 * An address of the row itself, not of a more specific row inside it: its last address, or (when the
 * last one is a row of its own: 240.0.0.0/4 ends in 255.255.255.255) its second.
 */
export function sampleOf(prefix: string): string {
  const last = rangeAddress(prefix, 'last')
  return specialRangeOf(last)?.prefix === prefix ? last : rangeAddress(prefix, 'second')
}

/** The last or the second address of a CIDR range, as the URL parser writes it. */
export function rangeAddress(prefix: string, which: 'last' | 'second'): string {
  const [network, bitsText] = prefix.split('/') as [string, string]
  const bits = Number(bitsText)
  const address = !network.includes(':')
    ? ipv4Address(network, bits, which)
    : ipv6Address(network, bits, which)
  return new URL(`http://${urlHost(address)}/`).hostname.replace(/^\[|\]$/g, '')
}

function ipv4Address(network: string, bits: number, which: 'last' | 'second'): string {
  const value = network.split('.').reduce((sum, byte) => sum * 256 + Number(byte), 0)
  const address = which === 'last' ? value + 2 ** (32 - bits) - 1 : value + 1
  return [24, 16, 8, 0].map((shift) => Math.floor(address / 2 ** shift) % 256).join('.')
}

function ipv6Address(network: string, bits: number, which: 'last' | 'second'): string {
  const [head = '', tail = ''] = network.split('::')
  const words = (part: string) => (part === '' ? [] : part.split(':'))
  const missing = 8 - words(head).length - words(tail).length
  const all = [...words(head), ...new Array<string>(missing).fill('0'), ...words(tail)]
  let value = all.reduce((sum, word) => (sum << 16n) | BigInt(`0x${word}`), 0n)
  if (which === 'last') value |= (1n << BigInt(128 - bits)) - 1n
  else if (bits < 128) value += 1n
  return Array.from({ length: 8 }, (_, index) =>
    ((value >> BigInt(16 * (7 - index))) & 0xffffn).toString(16),
  ).join(':')
}

export const urlHost = (address: string) => (address.includes(':') ? `[${address}]` : address)
