// The token's outer shape, without ethers, so a server can tell a signed key from a static one
// without loading the crypto stack at start.

export const SIGN_KEY_VERSION = 'v1'

/** True when a key value looks like a signed key (`v1.<claims>.<signature>`). */
export function isSignedKey(value: string): boolean {
  return value.startsWith(`${SIGN_KEY_VERSION}.`) && value.split('.').length === 3
}
