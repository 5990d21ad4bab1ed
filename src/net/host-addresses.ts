import { BlockList } from 'node:net'
import { networkInterfaces } from 'node:os'
import { plainAddress } from './special-addresses.ts'

/** One address of one of this host's network interfaces. */
export interface HostAddress {
  address: string
  interface: string
}

/** This host's addresses now (tests inject others). */
export type HostAddresses = () => readonly HostAddress[]

/**
 * Every address of every interface, read when asked (an interface can come up after start: a VPN, a
 * container bridge). A URL a requester chose may not reach them: the adapter, the metrics and the
 * dashboard listen on all interfaces by default, and a host numbered from public space has addresses
 * no registry names.
 */
export const interfaceAddresses: HostAddresses = () =>
  Object.entries(networkInterfaces()).flatMap(([name, entries]) =>
    (entries ?? []).map((entry) => ({ address: entry.address, interface: name })),
  )

/** The host address `address` is (compared as addresses, so `::1` and `0:0::1` are one), or undefined. */
export function hostAddressOf(
  address: string,
  addresses: readonly HostAddress[],
): HostAddress | undefined {
  const plain = plainAddress(address)
  if (!plain) return undefined
  return addresses.find((candidate) => {
    const own = plainAddress(candidate.address)
    // Same family only: Node's BlockList matches an IPv4 address against a mapped IPv6 rule.
    if (!own || own.family !== plain.family) return false
    const list = new BlockList()
    list.addAddress(own.address, own.family)
    return list.check(plain.address, plain.family)
  })
}
