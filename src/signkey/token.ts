import { randomBytes } from 'node:crypto'
import { getAddress, id, verifyMessage, Wallet } from 'ethers'
import { z } from 'zod'
import { SignKeyError } from './errors.ts'
import { SIGN_KEY_VERSION } from './format.ts'
import { hashParams } from './params-hash.ts'

// Token: `v1.<base64url(JSON claims)>.<base64url(65-byte signature)>`. The node signs the text
// `feedrunner-signkey:v1.<claims>` with EIP-191 (personal_sign), so changing any byte of the
// claims changes the recovered signer.

const VERSION = SIGN_KEY_VERSION
const DOMAIN = 'feedrunner-signkey:'
/** Tolerated clock difference between the node and the feed operator. */
const CLOCK_SKEW_SECONDS = 30

const claimsSchema = z.object({
  /** Request id (the on-chain request id, or the adapter's). */
  rid: z.string().min(1).max(200),
  /** Adapter endpoint name. */
  ep: z.string().min(1).max(100),
  /** hashParams() of the other query parameters. */
  ph: z.string().regex(/^0x[0-9a-f]{64}$/),
  /** The node's address (checksummed). */
  node: z.string().regex(/^0x[0-9a-fA-F]{40}$/),
  iat: z.number().int().nonnegative(),
  exp: z.number().int().positive(),
  /** Random: every key is unique, so a service can accept each one once (retries get a new key). */
  jti: z.string().regex(/^[A-Za-z0-9_-]{8,64}$/),
})
export type SignKeyClaims = z.infer<typeof claimsSchema>

const wallets = new Map<string, Wallet>()
function walletFor(privateKey: string): Wallet {
  let wallet = wallets.get(privateKey)
  if (!wallet) {
    wallet = new Wallet(privateKey)
    wallets.set(privateKey, wallet)
  }
  return wallet
}

export interface CreateSignKeyOptions {
  privateKey: string
  requestId: string
  endpoint: string
  /** The query parameters that will be sent, without `key`. */
  params: Readonly<Record<string, string>>
  ttlSeconds: number
  /** Epoch milliseconds; defaults to Date.now(). */
  now?: number
}

/** A short-lived key bound to one request, its parameters and the node. */
export async function createSignKey(options: CreateSignKeyOptions): Promise<string> {
  const wallet = walletFor(options.privateKey)
  const iat = Math.floor((options.now ?? Date.now()) / 1000)
  const claims: SignKeyClaims = {
    // Long ids (composite queue job ids) are bound by their hash to keep the token short.
    rid: options.requestId.length <= 200 ? options.requestId : id(options.requestId),
    ep: options.endpoint,
    ph: hashParams(options.params),
    node: wallet.address,
    iat,
    exp: iat + options.ttlSeconds,
    jti: randomBytes(12).toString('base64url'),
  }
  const body = `${VERSION}.${Buffer.from(JSON.stringify(claims)).toString('base64url')}`
  const signature = await wallet.signMessage(DOMAIN + body)
  return `${body}.${Buffer.from(signature.slice(2), 'hex').toString('base64url')}`
}

export interface VerifySignKeyOptions {
  /** The endpoint the request was made to. */
  endpoint: string
  /** The request's query parameters (`key` is ignored). */
  params: Readonly<Record<string, string>>
  /** Node addresses whose tokens are accepted. */
  allowedSigners: readonly string[]
  /** Epoch milliseconds; defaults to Date.now(). */
  now?: number
  /** Longest lifetime accepted, so a leaked signing setup cannot mint long-lived keys. Default 3600. */
  maxTtlSeconds?: number
}

function decodeToken(token: string): { body: string; claims: SignKeyClaims; signature: string } {
  const parts = token.split('.')
  if (
    parts.length !== 3 ||
    parts[0] !== VERSION ||
    !/^[A-Za-z0-9_-]+$/.test(parts[1]!) ||
    !/^[A-Za-z0-9_-]+$/.test(parts[2]!)
  ) {
    throw new SignKeyError(
      'MALFORMED',
      'signed key is malformed (expected v1.<claims>.<signature>)',
    )
  }
  let json: unknown
  try {
    json = JSON.parse(Buffer.from(parts[1]!, 'base64url').toString('utf8'))
  } catch {
    throw new SignKeyError('MALFORMED', 'signed key claims are not JSON')
  }
  const claims = claimsSchema.safeParse(json)
  if (!claims.success)
    throw new SignKeyError(
      'MALFORMED',
      `signed key claims are invalid (${claims.error.issues[0]?.path.join('.') ?? '?'})`,
    )
  const signature = Buffer.from(parts[2]!, 'base64url')
  if (signature.length !== 65)
    throw new SignKeyError('MALFORMED', 'signed key signature must be 65 bytes')
  return {
    body: `${parts[0]}.${parts[1]}`,
    claims: claims.data,
    signature: `0x${signature.toString('hex')}`,
  }
}

/**
 * For feed operators: checks a signed key against the request it came with. Returns the claims
 * or throws SignKeyError saying why the key is refused.
 */
export function verifySignKey(token: string, options: VerifySignKeyOptions): SignKeyClaims {
  const { body, claims, signature } = decodeToken(token)
  let signer: string
  try {
    signer = verifyMessage(DOMAIN + body, signature)
  } catch {
    throw new SignKeyError('BAD_SIGNATURE', 'signed key signature cannot be verified')
  }
  if (signer !== getAddress(claims.node))
    throw new SignKeyError(
      'BAD_SIGNATURE',
      'signed key was not signed by the node it names (tampered)',
    )
  const allowed = options.allowedSigners.map((address) => address.toLowerCase())
  if (!allowed.includes(signer.toLowerCase()))
    throw new SignKeyError('UNKNOWN_SIGNER', `signed key signer ${signer} is not an accepted node`)
  const now = Math.floor((options.now ?? Date.now()) / 1000)
  if (claims.exp <= now) throw new SignKeyError('EXPIRED', 'signed key has expired')
  if (claims.iat > now + CLOCK_SKEW_SECONDS)
    throw new SignKeyError('NOT_YET_VALID', 'signed key is issued in the future')
  if (claims.exp - claims.iat > (options.maxTtlSeconds ?? 3600))
    throw new SignKeyError('TTL_TOO_LONG', 'signed key lifetime is too long')
  if (claims.ep !== options.endpoint)
    throw new SignKeyError(
      'WRONG_ENDPOINT',
      `signed key was issued for endpoint ${claims.ep}, not ${options.endpoint}`,
    )
  if (claims.ph !== hashParams(options.params))
    throw new SignKeyError('PARAMS_MISMATCH', 'signed key was issued for other parameters')
  return claims
}
