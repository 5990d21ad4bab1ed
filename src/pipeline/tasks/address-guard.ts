import { lookup as dnsLookup, type LookupAddress } from 'node:dns'
import { isIP, type LookupFunction } from 'node:net'
import { Agent, buildConnector, type Dispatcher } from 'undici'
import { FeedrunnerError } from '../../config/errors.ts'
import { hostAddressOf, interfaceAddresses, type HostAddresses } from '../../net/host-addresses.ts'
import { plainAddress, specialRangeOf } from '../../net/special-addresses.ts'

export type { HostAddresses }

/**
 * The private-address guard of the http task, where the connection is made. As in Chainlink, a URL that
 * comes from a variable (chosen by whoever made the request) may not reach inward addresses unless
 * `allowUnrestrictedNetworkAccess="true"`; here, inward is every range of IANA's special-purpose
 * registries (src/net/special-addresses.ts) and every address of this host's interfaces
 * (src/net/host-addresses.ts), read at each connection.
 * The check sits in the HTTP client's own connector: the address checked is the address connected to.
 * Checking a name first and letting the client resolve it again to connect lets a name that answers a
 * public address first and a loopback one next (DNS rebinding) through, as tried on the dev stack.
 * Redirects are followed by the exchange (redirects.ts), each hop through the dispatcher its guard
 * asks for, so a hop a redirect leads to is checked even when the operator wrote the first URL.
 */

/** Why `address` may not be reached from a URL a requester chose, or undefined when it may. */
export function addressRefusal(
  address: string,
  hostAddresses: HostAddresses = interfaceAddresses,
): string | undefined {
  if (!plainAddress(address)) return 'not an IP address'
  const range = specialRangeOf(address)
  if (range) return `a special-purpose address (${range.prefix} ${range.name}, ${range.rfc})`
  const own = hostAddressOf(address, hostAddresses())
  if (own) return `an address of this host (interface ${own.interface})`
  return undefined
}

export function isRestrictedAddress(address: string, hostAddresses?: HostAddresses): boolean {
  return addressRefusal(address, hostAddresses) !== undefined
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
  override readonly code = 'ERR_RESTRICTED_ADDRESS'
  constructor(
    readonly host: string,
    readonly address: string,
    /** Why (addressRefusal): the registry row, or the interface. */
    readonly reason: string,
  ) {
    super(host === address ? `${host} is ${reason}` : `${host} resolves to ${address}, ${reason}`, {
      kind: 'bad_input',
    })
    this.name = 'RestrictedAddressError'
  }
}

/** A name that does not resolve: final for this run (a retry a few ms later resolves the same). */
export class UnresolvableHostError extends FeedrunnerError {
  override readonly code = 'ERR_UNRESOLVABLE_HOST'
  constructor(readonly host: string) {
    super(`cannot resolve ${host}`, { kind: 'bad_input' })
    this.name = 'UnresolvableHostError'
  }
}

/**
 * net's `lookup` hook: resolves once, refuses the whole answer when any address is inward. Exported
 * for its test: its answer to a lookup that succeeds shows only for a public address, which a test on
 * loopback may not connect to.
 */
export function guardedLookup(resolve: HostResolver, hostAddresses: HostAddresses): LookupFunction {
  return (hostname, options, callback) => {
    resolve(hostname).then(
      (addresses) => {
        const usable = addresses.filter(
          (entry) => !options.family || entry.family === options.family,
        )
        if (usable.length === 0) return callback(new UnresolvableHostError(hostname), '', 0)
        for (const entry of usable) {
          const refusal = addressRefusal(entry.address, hostAddresses)
          if (refusal)
            return callback(new RestrictedAddressError(hostname, entry.address, refusal), '', 0)
        }
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
function guardedConnector(
  resolve: HostResolver,
  hostAddresses: HostAddresses,
): buildConnector.connector {
  const connect = buildConnector({
    lookup: guardedLookup(resolve, hostAddresses),
  } as buildConnector.BuildOptions)
  return (options, callback) => {
    const host = options.hostname.replace(/^\[|\]$/g, '')
    const refusal = isIP(host) ? addressRefusal(host, hostAddresses) : undefined
    if (refusal) {
      callback(new RestrictedAddressError(host, host, refusal), null)
      return
    }
    connect(options, callback)
  }
}

/**
 * Keep-alive pools: one for connections made without the guard, one per resolver for guarded ones,
 * so a connection made without the guard is never reused by a guarded request.
 * undici's own idle timeout (4 s, shorter if the server says so): an idle connection the server has
 * closed meanwhile is not reused for a POST, which undici does not retry.
 */
export const trustedDispatcher: Dispatcher = new Agent()
const guardedDispatchers = new WeakMap<HostResolver, WeakMap<HostAddresses, Dispatcher>>()

export function guardedDispatcher(
  resolve: HostResolver = systemResolver,
  hostAddresses: HostAddresses = interfaceAddresses,
): Dispatcher {
  let byHost = guardedDispatchers.get(resolve)
  if (!byHost) guardedDispatchers.set(resolve, (byHost = new WeakMap()))
  let dispatcher = byHost.get(hostAddresses)
  if (!dispatcher) {
    dispatcher = new Agent({ connect: guardedConnector(resolve, hostAddresses) })
    byHost.set(hostAddresses, dispatcher)
  }
  return dispatcher
}
