import { createHash, timingSafeEqual } from 'node:crypto'
import { SignKeyError } from '../../signkey/errors.ts'
import { isSignedKey } from '../../signkey/format.ts'
import { FeedServiceError } from './errors.ts'

const digest = (value: string) => createHash('sha256').update(value).digest()

export interface KeyPolicy {
  /** Static keys accepted. */
  keys: readonly string[]
  /** Node addresses whose signed keys are accepted. */
  signers: readonly string[]
  maxTtlSeconds?: number
  /** Signed keys already used; a signed key is good for one call, so a captured one cannot be replayed. */
  used?: UsedSignedKeys
}

/** Signed keys seen, remembered until they expire. */
export class UsedSignedKeys {
  private readonly expiries = new Map<string, number>()

  /** Records a key; false when it was used before. */
  use(key: string, expiresAtSeconds: number, nowSeconds: number): boolean {
    const id = digest(key).toString('hex')
    if (this.expiries.has(id)) return false
    if (this.expiries.size >= 10_000) this.forgetExpired(nowSeconds)
    this.expiries.set(id, expiresAtSeconds)
    return true
  }

  private forgetExpired(nowSeconds: number): void {
    for (const [id, expiry] of this.expiries) if (expiry <= nowSeconds) this.expiries.delete(id)
  }
}

/**
 * Checks the request's `key`: a static key from the list, or a signed key of an accepted node
 * bound to this endpoint and these parameters. Throws 401; messages never contain the key.
 */
export async function checkKey(
  policy: KeyPolicy,
  key: string | undefined,
  endpoint: string,
  params: Record<string, string>,
  now: number,
): Promise<void> {
  if (key === undefined || key === '') throw new FeedServiceError(401, 'parameter key is required')
  if (isSignedKey(key)) {
    if (policy.signers.length === 0)
      throw new FeedServiceError(
        401,
        'parameter key is not valid: signed keys are not accepted by this service',
      )
    // ethers is loaded with the first signed key: a service with static keys starts faster.
    const { verifySignKey } = await import('../../signkey/token.ts')
    let expiresAt: number
    try {
      expiresAt = verifySignKey(key, {
        endpoint,
        params,
        allowedSigners: policy.signers,
        now,
        ...(policy.maxTtlSeconds ? { maxTtlSeconds: policy.maxTtlSeconds } : {}),
      }).exp
    } catch (error) {
      if (error instanceof SignKeyError)
        throw new FeedServiceError(401, `parameter key is not valid: ${error.message}`)
      throw error
    }
    if (policy.used && !policy.used.use(key, expiresAt, Math.floor(now / 1000))) {
      throw new FeedServiceError(401, 'parameter key is not valid: signed key was already used')
    }
    return
  }
  // Compare digests in constant time so the response time says nothing about the key.
  const given = digest(key)
  if (!policy.keys.some((accepted) => timingSafeEqual(digest(accepted), given)))
    throw new FeedServiceError(401, 'parameter key is not valid')
}
