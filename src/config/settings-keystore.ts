import { z } from 'zod'
import { optional } from './settings-kit.ts'

/** Where the sender keys are kept encrypted, and their password (src/config/keystore.ts). */
export const keystoreSettings = {
  KEYSTORE_DIR: optional(z.string().min(1), {
    group: 'chain',
    unit: 'path',
    description:
      'Folder of Web3 Secret Storage keystores (what `feedrunner keys create`, `cast wallet` and geth write): each file is a sender key, in file name order. Replaces NODE_PRIVATE_KEY(S) for sending and signing.',
    whenUnset: 'NODE_PRIVATE_KEY(S) from the environment',
    example: 'keys',
  }),
  KEYSTORE_PASSWORD_FILE: optional(z.string().min(1), {
    group: 'chain',
    unit: 'path',
    description:
      "File holding the keystores' password (its first line); kept out of the environment, e.g. a mounted secret.",
    whenUnset: 'KEYSTORE_PASSWORD',
    example: 'keys/password',
  }),
  KEYSTORE_PASSWORD: optional(z.string().min(1), {
    group: 'chain',
    sensitive: true,
    description: "The keystores' password, when it is not in KEYSTORE_PASSWORD_FILE.",
    whenUnset: 'KEYSTORE_PASSWORD_FILE',
  }),
}
