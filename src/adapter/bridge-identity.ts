import { z } from 'zod'

/**
 * The part of a bridge call's body that names the run it belongs to: a node's bridge task sends the
 * job's id as `id` and `meta.oracleRequest` on. What the framework validates is `data`; this reads
 * only these, so an adapter line about a call can be found by the same fields as the runner's lines.
 */
const bridgeRunSchema = z.object({
  id: z
    .string()
    .regex(/^[0-9a-fA-F-]{1,64}$/)
    .optional(),
  meta: z.object({
    oracleRequest: z.object({ requestId: z.string().regex(/^0x[0-9a-fA-F]{64}$/) }),
  }),
})

/** The on-chain request a bridge call is for and the job (its external id), when the body says. */
export interface BridgeRun {
  requestId: string
  job: string
}

export function bridgeRunOf(body: unknown): BridgeRun | undefined {
  const parsed = bridgeRunSchema.safeParse(body)
  if (!parsed.success) return undefined
  return { requestId: parsed.data.meta.oracleRequest.requestId, job: parsed.data.id ?? '(none)' }
}
