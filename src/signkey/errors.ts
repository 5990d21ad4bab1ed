import { FeedrunnerError } from '../config/errors.ts'

export type SignKeyErrorCode =
  | 'MALFORMED'
  | 'BAD_SIGNATURE'
  | 'UNKNOWN_SIGNER'
  | 'EXPIRED'
  | 'NOT_YET_VALID'
  | 'TTL_TOO_LONG'
  | 'WRONG_ENDPOINT'
  | 'PARAMS_MISMATCH'
  | 'MISSING_SECRET'
  | 'FORBIDDEN_ENV'
  | 'CLIENT_KEY_REFUSED'

/** A key that cannot be produced or is not accepted. Messages never contain a key or token. */
export class SignKeyError extends FeedrunnerError {
  override readonly name = 'SignKeyError'
  constructor(
    override readonly code: SignKeyErrorCode,
    message: string,
  ) {
    super(message, { kind: CONFIG_CODES.has(code) ? 'config' : 'not_authorised' })
  }
}

/** Codes that say the node's own setup is wrong (a secret not set, a placeholder where none may be). */
const CONFIG_CODES: ReadonlySet<SignKeyErrorCode> = new Set(['MISSING_SECRET', 'FORBIDDEN_ENV'])
