import { z } from 'zod'
import {
  ERROR_KINDS,
  errorFromLinks,
  FeedrunnerError,
  type SerialisedError,
  type SerialisedLink,
} from './errors.ts'

// Apart from errors.ts, which every isolate loads: zod is read only where stored errors are (about
// 9 MB of each isolate's memory otherwise).

const serialisedLinkSchema = z.object({
  kind: z.enum(ERROR_KINDS),
  message: z.string(),
  retryable: z.boolean(),
  code: z.string().optional(),
  bound: z.string().optional(),
}) satisfies z.ZodType<SerialisedLink>

/**
 * An error as it is stored in Redis (SerialisedError), checked as it is read. Redis's Lua JSON writes
 * an empty list as `{}`, so anything but a list reads as no causes.
 */
export const serialisedErrorSchema = serialisedLinkSchema.extend({
  causes: z.preprocess(
    (value) => (Array.isArray(value) ? value : []),
    z.array(serialisedLinkSchema),
  ),
}) satisfies z.ZodType<SerialisedError>

/**
 * A stored error back as a FeedrunnerError of the same kind, with its causes as its `cause` chain.
 * What does not parse (a reason written by an older version, a crash's text) becomes `internal`,
 * its text the message.
 */
export function reviveError(stored: unknown): FeedrunnerError {
  // One of ours already (its causes are errors, not stored links): as it is.
  if (stored instanceof FeedrunnerError) return stored
  const parsed = serialisedErrorSchema.safeParse(stored)
  if (!parsed.success) {
    return new FeedrunnerError(typeof stored === 'string' ? stored : JSON.stringify(stored), {
      kind: 'internal',
    })
  }
  return errorFromLinks(parsed.data)
}

/** A stored error that may be JSON text (a queue job's failed reason) revived; see reviveError. */
export function reviveErrorText(text: string): FeedrunnerError {
  try {
    return reviveError(JSON.parse(text))
  } catch {
    return reviveError(text)
  }
}
