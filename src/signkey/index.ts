export { SignKeyError, type SignKeyErrorCode } from './errors.ts'
export { hashParams } from './params-hash.ts'
export { isSignedKey, SIGN_KEY_VERSION } from './format.ts'
export {
  createSignKey,
  verifySignKey,
  type CreateSignKeyOptions,
  type SignKeyClaims,
  type VerifySignKeyOptions,
} from './token.ts'
export {
  ENV_KEY_NAME,
  ENV_PLACEHOLDER_PREFIX,
  isPlaceholder,
  SIGN_KEY_PLACEHOLDER,
  resolveKey,
  substituteQuery,
  type KeyContext,
} from './substitute.ts'
