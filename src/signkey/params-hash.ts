import { id } from 'ethers'

/**
 * Hash of a request's parameters without `key`: the same set of name/value pairs gives the same
 * hash whatever their order, so the signer and the feed operator agree.
 */
export function hashParams(params: Readonly<Record<string, string>>): string {
  const entries = Object.entries(params)
    .filter(([name]) => name !== 'key')
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
  return id(JSON.stringify(entries))
}
