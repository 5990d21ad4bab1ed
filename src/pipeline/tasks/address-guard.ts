import { lookup as dnsLookup, type LookupAddress } from 'node:dns'
import { BlockList, isIP, type LookupFunction } from 'node:net'
import { Agent, buildConnector, interceptors, type Dispatcher } from 'undici'
import { FeedrunnerError } from '../../config/errors.ts'

/**
 * The private-address guard of the http task, where the connection is made. As in Chainlink, a URL that
 * comes from a variable (chosen by whoever made the request) may not reach loopback, private,
 * link-local or unspecified addresses unless `allowUnrestrictedNetworkAccess="true"`.
 * The check sits in the HTTP client's own connector: the address checked is the address connected to.
 * Checking a name first and letting the client resolve it again to connect lets a name that answers a
 * public address first and a loopback one next (DNS rebinding) through (issue 23, tried on the dev stack).
 * Every redirect hop makes its own connection through the same connector, so each hop is checked.
 */
const restricted = new BlockList()
for (const [net, prefix] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
] as const) {
  restricted.addSubnet(net, prefix, 'ipv4')
}
for (const [net, prefix] of [
  ['::', 128],
  ['::1', 128],
  ['fc00::', 7],
  ['fe80::', 10],
  ['ff00::', 8],
] as const)
  restricted.addSubnet(net, prefix, 'ipv6')

export function isRestrictedAddress(address: string): boolean {
  const family = isIP(address)
  if (family === 0) return true
  const embedded = family === 6 ? embeddedIpv4(address) : undefined
  if (embedded !== undefined && restricted.check(embedded, 'ipv4')) return true
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address)
  if (mapped?.[1]) return restricted.check(mapped[1], 'ipv4')
  return restricted.check(address, family === 4 ? 'ipv4' : 'ipv6')
}

/**
 * The IPv4 address an IPv6 address carries, if any: IPv4-mapped (::ffff:a.b.c.d), IPv4-compatible
 * (::a.b.c.d), NAT64 (64:ff9b::/96) and 6to4 (2002:AABB:CCDD::/48). A gateway may turn such an
 * address into the IPv4 one, so it is judged by that address.
 */
function embeddedIpv4(address: string): string | undefined {
  const words = ipv6Words(address)
  if (!words) return undefined
  const quad = (high: number, low: number) =>
    `${high >> 8}.${high & 0xff}.${low >> 8}.${low & 0xff}`
  const zeroUntil = (end: number) => words.slice(0, end).every((word) => word === 0)
  if (zeroUntil(5) && words[5] === 0xffff) return quad(words[6]!, words[7]!)
  if (zeroUntil(6) && (words[6] !== 0 || words[7]! > 1)) return quad(words[6]!, words[7]!)
  if (words[0] === 0x64 && words[1] === 0xff9b && words.slice(2, 6).every((word) => word === 0))
    return quad(words[6]!, words[7]!)
  if (words[0] === 0x2002) return quad(words[1]!, words[2]!)
  return undefined
}

/** The eight 16-bit words of an IPv6 address (a trailing dotted quad allowed), or undefined. */
function ipv6Words(address: string): number[] | undefined {
  let text = address.toLowerCase().replace(/%.*$/, '')
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(text)
  if (dotted?.[1]) {
    const bytes = dotted[1].split('.').map(Number)
    if (bytes.some((byte) => byte > 255)) return undefined
    text = `${text.slice(0, -dotted[1].length)}${((bytes[0]! << 8) | bytes[1]!).toString(16)}:${((bytes[2]! << 8) | bytes[3]!).toString(16)}`
  }
  const halves = text.split('::')
  if (halves.length > 2) return undefined
  const parse = (part: string) =>
    part === '' ? [] : part.split(':').map((word) => Number.parseInt(word, 16))
  const head = parse(halves[0]!)
  const tail = halves.length === 2 ? parse(halves[1]!) : []
  const words =
    halves.length === 2
      ? [...head, ...new Array<number>(8 - head.length - tail.length).fill(0), ...tail]
      : head
  return words.length === 8 &&
    words.every((word) => Number.isInteger(word) && word >= 0 && word <= 0xffff)
    ? words
    : undefined
}

/** Resolves a host name to every address it has (dns.lookup with `all` by default; tests inject one). */
export type HostResolver = (hostname: string) => Promise<readonly LookupAddress[]>

export const systemResolver: HostResolver = (hostname) =>
  new Promise((resolve, reject) =>
    dnsLookup(hostname, { all: true }, (error, addresses) =>
      error ? reject(error) : resolve(addresses),
    ),
  )

/** A connection the guard refused: `address` is what `host` resolved to (or the host itself). */
export class RestrictedAddressError extends FeedrunnerError {
  readonly code = 'ERR_RESTRICTED_ADDRESS'
  constructor(
    readonly host: string,
    readonly address: string,
  ) {
    super(
      host === address
        ? `${host} is a private or loopback address`
        : `${host} resolves to ${address}, a private or loopback address`,
      { kind: 'bad_input' },
    )
    this.name = 'RestrictedAddressError'
  }
}

/** A name that does not resolve: final for this run (a retry a few ms later resolves the same). */
export class UnresolvableHostError extends FeedrunnerError {
  readonly code = 'ERR_UNRESOLVABLE_HOST'
  constructor(readonly host: string) {
    super(`cannot resolve ${host}`, { kind: 'bad_input' })
    this.name = 'UnresolvableHostError'
  }
}

/** net's `lookup` hook: resolves once, refuses the whole answer when any address is inward. */
function guardedLookup(resolve: HostResolver): LookupFunction {
  return (hostname, options, callback) => {
    resolve(hostname).then(
      (addresses) => {
        const usable = addresses.filter(
          (entry) => !options.family || entry.family === options.family,
        )
        if (usable.length === 0) return callback(new UnresolvableHostError(hostname), '', 0)
        const inward = usable.find((entry) => isRestrictedAddress(entry.address))
        if (inward) return callback(new RestrictedAddressError(hostname, inward.address), '', 0)
        if (options.all) return callback(null, usable as LookupAddress[])
        callback(null, usable[0]!.address, usable[0]!.family)
      },
      () => callback(new UnresolvableHostError(hostname), '', 0),
    )
  }
}

/**
 * A connector that refuses an inward IP literal (net does not call `lookup` for one) and resolves
 * names through the guarded lookup. `127.1`, `2130706433` and `0x7f.1` reach here as 127.0.0.1: the URL
 * parser has already normalised them.
 */
function guardedConnector(resolve: HostResolver): buildConnector.connector {
  const connect = buildConnector({ lookup: guardedLookup(resolve) } as buildConnector.BuildOptions)
  return (options, callback) => {
    const host = options.hostname.replace(/^\[|\]$/g, '')
    if (isIP(host) && isRestrictedAddress(host)) {
      callback(new RestrictedAddressError(host, host), null)
      return
    }
    connect(options, callback)
  }
}

const MAX_REDIRECTIONS = 20

/**
 * Keep-alive pools: one for URLs the operator wrote (trusted, may reach anything), one per resolver for
 * guarded URLs, so a connection made without the guard is never reused by a guarded request.
 * undici's own idle timeout (4 s, shorter if the server says so): an idle connection the server has
 * closed meanwhile is not reused for a POST, which undici does not retry.
 */
export const trustedDispatcher: Dispatcher = new Agent().compose(
  interceptors.redirect({ maxRedirections: MAX_REDIRECTIONS }),
)
const guardedDispatchers = new WeakMap<HostResolver, Dispatcher>()

export function guardedDispatcher(resolve: HostResolver = systemResolver): Dispatcher {
  let dispatcher = guardedDispatchers.get(resolve)
  if (!dispatcher) {
    dispatcher = new Agent({ connect: guardedConnector(resolve) }).compose(
      interceptors.redirect({ maxRedirections: MAX_REDIRECTIONS }),
    )
    guardedDispatchers.set(resolve, dispatcher)
  }
  return dispatcher
}

export { MAX_REDIRECTIONS }
