import type { EventFragment, FunctionFragment } from 'ethers'

/**
 * The fragment with its selector (a function's) or topic hash (an event's) computed once.
 *
 * ethers 6 derives both with keccak256 of the signature on every read, and `encodeFunctionData` and
 * `decodeEventLog` read them on every call. A fragment the runner uses for every request gets the value
 * fixed as an own property, which takes precedence over ethers' getter.
 */
export function withFixedHash<T extends EventFragment | FunctionFragment>(fragment: T): T {
  const property = fragment.type === 'event' ? 'topicHash' : 'selector'
  const value = (fragment as unknown as Record<typeof property, string>)[property]
  Object.defineProperty(fragment, property, { value, enumerable: false, writable: false })
  return fragment
}
