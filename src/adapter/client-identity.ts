import { BlockList, isIP } from 'node:net'
import { parseAddressRange } from '../config/address-ranges.ts'

/**
 * Who a request comes from, as the fetch queues' fair shares count it (fetch-shares.ts).
 *
 * By default a client is its socket's address. Behind a reverse proxy, a load balancer or a shared
 * NAT every caller has the proxy's address, so a flood from one Chainlink node queued every other
 * node's bridge calls behind it. Where the operator names the proxy (ADAPTER_TRUSTED_PROXIES), a
 * request whose socket comes from it is counted by the address the proxy says it forwarded for: the
 * last address of X-Forwarded-For that is not itself a trusted proxy (a proxy appends the address it
 * was reached from, so what lies to the left of that was written by the caller and proves nothing).
 * X-Forwarded-For from any other address is ignored: a caller writing a new address on each request
 * would otherwise be a new client each time, always first in line.
 */
export type ClientOf = (request: object) => string

/** How a request looks to it: Fastify's raw socket and headers (the framework's requests are Fastify's). */
interface RequestLike {
  socket?: { remoteAddress?: string }
  raw?: { socket?: { remoteAddress?: string } }
  headers?: Record<string, string | string[] | undefined>
}

/** Reads ADAPTER_TRUSTED_PROXIES' entries (addresses and CIDR ranges, already checked by its schema). */
export function trustedProxies(entries: readonly string[] | undefined): BlockList | undefined {
  if (!entries || entries.length === 0) return undefined
  const list = new BlockList()
  for (const entry of entries) {
    const parsed = parseAddressRange(entry)
    if (!parsed) continue
    if (parsed.prefix === undefined) list.addAddress(parsed.address, parsed.family)
    else list.addSubnet(parsed.address, parsed.prefix, parsed.family)
  }
  return list
}

export function clientIdentity(trusted: BlockList | undefined): ClientOf {
  return (request) => {
    const seen = request as RequestLike
    const socket = plainAddress(seen.socket?.remoteAddress ?? seen.raw?.socket?.remoteAddress)
    if (socket === undefined) return 'unknown'
    if (!trusted || !isTrusted(trusted, socket)) return socket
    return forwardedFor(seen.headers?.['x-forwarded-for'], trusted) ?? socket
  }
}

/** The rightmost forwarded address that is not a trusted proxy; undefined when there is none. */
function forwardedFor(
  header: string | string[] | undefined,
  trusted: BlockList,
): string | undefined {
  if (header === undefined) return undefined
  const hops = (Array.isArray(header) ? header.join(',') : header).split(',')
  for (let index = hops.length - 1; index >= 0; index--) {
    const hop = plainAddress(hopAddress(hops[index]!))
    // Something the proxies did not write (a name, garbage): what lies left of it is not theirs either.
    if (hop === undefined) return undefined
    if (!isTrusted(trusted, hop)) return hop
  }
  return undefined
}

/** An X-Forwarded-For entry's address: IPv6 may come bracketed, either may carry a port. */
function hopAddress(hop: string): string {
  const text = hop.trim()
  const bracketed = /^\[([^\]]+)\](?::\d+)?$/.exec(text)
  if (bracketed) return bracketed[1]!
  const withPort = /^(\d{1,3}(?:\.\d{1,3}){3}):\d+$/.exec(text)
  return withPort ? withPort[1]! : text
}

/** The address as one spelling: IPv4-mapped IPv6 (`::ffff:10.0.0.1`) as its IPv4 address. */
function plainAddress(address: string | undefined): string | undefined {
  if (address === undefined) return undefined
  const mapped = /^::ffff:(\d{1,3}(?:\.\d{1,3}){3})$/i.exec(address)
  const plain = mapped ? mapped[1]! : address
  return isIP(plain) === 0 ? undefined : plain.toLowerCase()
}

function isTrusted(trusted: BlockList, address: string): boolean {
  return trusted.check(address, isIP(address) === 4 ? 'ipv4' : 'ipv6')
}
