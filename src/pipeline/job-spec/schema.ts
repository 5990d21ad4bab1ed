import { isAddress } from 'ethers'
import { z } from 'zod'
import { parseDuration } from '../duration.ts'

/** The TOML fields of a Chainlink `directrequest` job spec, as this runner accepts them. */
const address = z.string().refine((text) => /^0x[0-9a-fA-F]{40}$/.test(text) && isAddress(text), {
  message: 'must be a 0x-prefixed 20-byte address with a valid EIP-55 checksum',
})
const unsignedInteger = z
  .union([
    z.number().int().nonnegative(),
    z.string().regex(/^\d+$/, 'must be a non-negative integer'),
  ])
  .transform((value) => BigInt(value))
const duration = z.string().refine((text) => parseDuration(text) !== undefined, {
  message: 'must be a duration such as "30s" or "1m"',
})

export const jobSpecFields = z.strictObject({
  type: z.literal('directrequest', { message: 'must be "directrequest"' }),
  schemaVersion: z.literal(1, { message: 'must be 1' }),
  name: z.string().trim().min(1, 'must not be empty'),
  // Chainlink's UUID parser takes the 32 hex digits with or without dashes.
  externalJobID: z
    .string()
    .regex(
      /^[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{12}$/,
      'must be a UUID such as 0eec7e1d-d0d2-476c-a1a8-72dfb6633f46',
    )
    .transform((text) =>
      text.toLowerCase().replace(/^(.{8})-?(.{4})-?(.{4})-?(.{4})-?(.{12})$/, '$1-$2-$3-$4-$5'),
    ),
  contractAddress: address,
  evmChainID: unsignedInteger,
  minIncomingConfirmations: z.number().int().min(0).max(1000).optional(),
  minContractPaymentLinkJuels: unsignedInteger.optional(),
  requesters: z.array(address).optional(),
  maxTaskDuration: duration.optional(),
  gasLimit: z.number().int().positive().optional(),
  forwardingAllowed: z.boolean().optional(),
  observationSource: z.string().min(1, 'must not be empty'),
})

export type JobSpecFields = z.output<typeof jobSpecFields>
