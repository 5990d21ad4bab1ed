import { isIP } from 'node:net'

/** One address or CIDR range, as a setting names it (ADAPTER_TRUSTED_PROXIES). */
export interface AddressRange {
  address: string
  family: 'ipv4' | 'ipv6'
  /** Absent for a single address. */
  prefix?: number
}

/** An address or `address/prefix` (`10.0.0.5`, `10.0.0.0/8`, `fd00::/8`); undefined when it is neither. */
export function parseAddressRange(entry: string): AddressRange | undefined {
  const [address = '', prefixText, extra] = entry.trim().split('/')
  if (extra !== undefined) return undefined
  const version = isIP(address)
  if (version === 0) return undefined
  const family = version === 4 ? 'ipv4' : 'ipv6'
  if (prefixText === undefined) return { address, family }
  if (!/^\d{1,3}$/.test(prefixText)) return undefined
  const prefix = Number(prefixText)
  if (prefix > (version === 4 ? 32 : 128)) return undefined
  return { address, family, prefix }
}
