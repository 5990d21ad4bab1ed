import { BlockList, isIP } from 'node:net'

/**
 * IANA's IPv4 and IPv6 Special-Purpose Address Registries, every row
 * (iana.org/assignments/iana-ipv4-special-registry and iana-ipv6-special-registry, as of the RFC 9780
 * update of 2025-04), and five ranges beyond them that a guard must know too. A URL a requester chose
 * may reach none of these: not only loopback and private networks, but documentation and benchmarking
 * ranges a host may be numbered from (this machine's own eth0 is 192.0.2.2, TEST-NET-1), the
 * translation prefixes that carry an IPv4 address (NAT64, SIIT, 6to4, Teredo) and the anycast and
 * protocol blocks, which serve no data a request may fetch. The rows IANA marks globally reachable
 * are refused as well: the well-known NAT64 prefix among them, so on an IPv6-only host behind DNS64
 * an IPv4-only source needs `allowUnrestrictedNetworkAccess` (docs/security.md).
 */
export interface SpecialRange {
  /** CIDR, as the registry writes it. */
  prefix: string
  name: string
  rfc: string
  registry: 'IANA IPv4' | 'IANA IPv6' | 'beyond the registries'
}

const v4 = (prefix: string, name: string, rfc: string): SpecialRange => ({
  prefix,
  name,
  rfc,
  registry: 'IANA IPv4',
})
const v6 = (prefix: string, name: string, rfc: string): SpecialRange => ({
  prefix,
  name,
  rfc,
  registry: 'IANA IPv6',
})
const beyond = (prefix: string, name: string, rfc: string): SpecialRange => ({
  prefix,
  name,
  rfc,
  registry: 'beyond the registries',
})

export const SPECIAL_RANGES: readonly SpecialRange[] = [
  v4('0.0.0.0/8', '"This network"', 'RFC 791'),
  v4('0.0.0.0/32', '"This host on this network"', 'RFC 1122'),
  v4('10.0.0.0/8', 'Private-Use', 'RFC 1918'),
  v4('100.64.0.0/10', 'Shared Address Space', 'RFC 6598'),
  v4('127.0.0.0/8', 'Loopback', 'RFC 1122'),
  v4('169.254.0.0/16', 'Link Local', 'RFC 3927'),
  v4('172.16.0.0/12', 'Private-Use', 'RFC 1918'),
  v4('192.0.0.0/24', 'IETF Protocol Assignments', 'RFC 6890'),
  v4('192.0.0.0/29', 'IPv4 Service Continuity Prefix', 'RFC 7335'),
  v4('192.0.0.8/32', 'IPv4 dummy address', 'RFC 7600'),
  v4('192.0.0.9/32', 'Port Control Protocol Anycast', 'RFC 7723'),
  v4('192.0.0.10/32', 'Traversal Using Relays around NAT Anycast', 'RFC 8155'),
  v4('192.0.0.170/32', 'NAT64/DNS64 Discovery', 'RFC 8880'),
  v4('192.0.0.171/32', 'NAT64/DNS64 Discovery', 'RFC 8880'),
  v4('192.0.2.0/24', 'Documentation (TEST-NET-1)', 'RFC 5737'),
  v4('192.31.196.0/24', 'AS112-v4', 'RFC 7535'),
  v4('192.52.193.0/24', 'AMT', 'RFC 7450'),
  v4('192.88.99.0/24', 'Deprecated (6to4 Relay Anycast)', 'RFC 7526'),
  v4('192.88.99.2/32', '6a44-relay anycast address', 'RFC 6751'),
  v4('192.168.0.0/16', 'Private-Use', 'RFC 1918'),
  v4('192.175.48.0/24', 'Direct Delegation AS112 Service', 'RFC 7534'),
  v4('198.18.0.0/15', 'Benchmarking', 'RFC 2544'),
  v4('198.51.100.0/24', 'Documentation (TEST-NET-2)', 'RFC 5737'),
  v4('203.0.113.0/24', 'Documentation (TEST-NET-3)', 'RFC 5737'),
  v4('240.0.0.0/4', 'Reserved', 'RFC 1112'),
  v4('255.255.255.255/32', 'Limited Broadcast', 'RFC 919'),
  beyond('224.0.0.0/4', 'Multicast', 'RFC 5771'),

  v6('::1/128', 'Loopback Address', 'RFC 4291'),
  v6('::/128', 'Unspecified Address', 'RFC 4291'),
  v6('::ffff:0:0/96', 'IPv4-mapped Address', 'RFC 4291'),
  v6('64:ff9b::/96', 'IPv4-IPv6 Translation', 'RFC 6052'),
  v6('64:ff9b:1::/48', 'IPv4-IPv6 Translation (local use)', 'RFC 8215'),
  v6('100::/64', 'Discard-Only Address Block', 'RFC 6666'),
  v6('100:0:0:1::/64', 'Dummy IPv6 Prefix', 'RFC 9780'),
  v6('2001::/23', 'IETF Protocol Assignments', 'RFC 2928'),
  v6('2001::/32', 'TEREDO', 'RFC 4380'),
  v6('2001:1::1/128', 'Port Control Protocol Anycast', 'RFC 7723'),
  v6('2001:1::2/128', 'Traversal Using Relays around NAT Anycast', 'RFC 8155'),
  v6('2001:1::3/128', 'DNS-SD Service Registration Protocol Anycast', 'RFC 9665'),
  v6('2001:2::/48', 'Benchmarking', 'RFC 5180'),
  v6('2001:3::/32', 'AMT', 'RFC 7450'),
  v6('2001:4:112::/48', 'AS112-v6', 'RFC 7535'),
  v6('2001:10::/28', 'Deprecated (previously ORCHID)', 'RFC 4843'),
  v6('2001:20::/28', 'ORCHIDv2', 'RFC 7343'),
  v6('2001:30::/28', 'Drone Remote ID Protocol Entity Tags (DETs) Prefix', 'RFC 9374'),
  v6('2001:db8::/32', 'Documentation', 'RFC 3849'),
  v6('2002::/16', '6to4', 'RFC 3056'),
  v6('2620:4f:8000::/48', 'Direct Delegation AS112 Service', 'RFC 7534'),
  v6('3fff::/20', 'Documentation', 'RFC 9637'),
  v6('5f00::/16', 'Segment Routing (SRv6) SIDs', 'RFC 9602'),
  v6('fc00::/7', 'Unique-Local', 'RFC 4193'),
  v6('fe80::/10', 'Link-Local Unicast', 'RFC 4291'),
  beyond('ff00::/8', 'Multicast', 'RFC 4291'),
  beyond('fec0::/10', 'Site-Local (deprecated)', 'RFC 3879'),
  beyond('::/96', 'IPv4-Compatible (deprecated)', 'RFC 4291'),
  beyond('::ffff:0:0:0/96', 'IPv4-translated (SIIT)', 'RFC 2765'),
]

interface CompiledRange {
  range: SpecialRange
  bits: number
  list: BlockList
}

type Family = 'ipv4' | 'ipv6'

/**
 * One BlockList per row and one per family, an address checked only against rows of its own family:
 * Node's BlockList matches an IPv4 address against an IPv6 rule for ::ffff:0:0/96 (as if mapped),
 * which would refuse every IPv4 address.
 */
function compile(family: Family): { any: BlockList; rows: CompiledRange[] } {
  const any = new BlockList()
  const rows: CompiledRange[] = []
  for (const range of SPECIAL_RANGES) {
    const [network, bits] = range.prefix.split('/') as [string, string]
    if ((isIP(network) === 4 ? 'ipv4' : 'ipv6') !== family) continue
    const list = new BlockList()
    list.addSubnet(network, Number(bits), family)
    any.addSubnet(network, Number(bits), family)
    rows.push({ range, bits: Number(bits), list })
  }
  return { any, rows }
}
const byFamily = { ipv4: compile('ipv4'), ipv6: compile('ipv6') }

/** An IP address without brackets or an IPv6 zone (`fe80::1%eth0`), or undefined when it is none. */
export function plainAddress(address: string): { address: string; family: Family } | undefined {
  const plain = address.replace(/^\[|\]$/g, '').replace(/%.*$/, '')
  const family = isIP(plain)
  if (family === 0) return undefined
  return { address: plain, family: family === 4 ? 'ipv4' : 'ipv6' }
}

/**
 * The most specific special-purpose range `address` is in, or undefined. Every IPv6 form that
 * carries an IPv4 address (mapped, SIIT, NAT64, 6to4, Teredo, IPv4-compatible) has a row of its own.
 */
export function specialRangeOf(address: string): SpecialRange | undefined {
  const plain = plainAddress(address)
  if (!plain) return undefined
  const { any, rows } = byFamily[plain.family]
  if (!any.check(plain.address, plain.family)) return undefined
  let best: CompiledRange | undefined
  for (const row of rows) {
    if (best && row.bits <= best.bits) continue
    if (row.list.check(plain.address, plain.family)) best = row
  }
  return best?.range
}
