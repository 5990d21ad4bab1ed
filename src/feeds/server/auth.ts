import { createHash, timingSafeEqual } from 'node:crypto'
import { SignKeyError } from '../../signkey/errors.ts'
import { isSignedKey } from '../../signkey/format.ts'
import { FeedServiceError } from './errors.ts'

export interface KeyPolicy {
  /** Static keys accepted. */
  keys: readonly string[]
  /** Node addresses whose signed keys are accepted. */
  signers: readonly string[]
  maxTtlSeconds?: number
}

const digest = (value: string) => createHash('sha256').update(value).digest()

/**
 * Checks the request's `key`: a static key from the list, or a signed key of an accepted node
 * bound to this endpoint and these parameters. Throws 401; messages never contain the key.
 */
export async function checkKey(policy: KeyPolicy, key: string | undefined, endpoint: string, params: Record<string, string>, now: number): Promise<void> {
  if (key === undefined || key === '') throw new FeedServiceError(401, 'parameter key is required')
  if (isSignedKey(key)) {
    if (policy.signers.length === 0) throw new FeedServiceError(401, 'parameter key is not valid: signed keys are not accepted by this service')
    // ethers is loaded with the first signed key: a service with static keys starts faster.
    const { verifySignKey } = await import('../../signkey/token.ts')
    try {
      verifySignKey(key, { endpoint, params, allowedSigners: policy.signers, now, ...(policy.maxTtlSeconds ? { maxTtlSeconds: policy.maxTtlSeconds } : {}) })
      return
    } catch (error) {
      if (error instanceof SignKeyError) throw new FeedServiceError(401, `parameter key is not valid: ${error.message}`)
      throw error
    }
  }
  // Compare digests in constant time so the response time says nothing about the key.
  const given = digest(key)
  if (!policy.keys.some((accepted) => timingSafeEqual(digest(accepted), given))) throw new FeedServiceError(401, 'parameter key is not valid')
}
