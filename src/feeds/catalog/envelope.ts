import { z } from 'zod'
import { normaliseData } from './data.ts'
import type { CatalogEntry } from './types.ts'

const provider = z.looseObject({
  name: z.string(),
  subscription: z.boolean().optional(),
  institutionGrade: z.boolean().optional(),
})

/** The common response envelope of every endpoint (FEEDS.md), success or error. */
export const envelopeSchema = z.looseObject({
  status: z.number().int(),
  result: z.string(),
  description: z.string(),
  query: z.record(z.string(), z.unknown()).optional(),
  provider: provider.optional(),
  data: z.unknown().optional(),
  /** HTTP-date, e.g. `Fri, 16 Aug 2024 19:00:00 GMT`. */
  time: z.string(),
  /** Epoch milliseconds. */
  timestamp: z.number(),
  lastUpdated: z.number().optional(),
})
export type Envelope = z.infer<typeof envelopeSchema>

const httpDate = z
  .string()
  .regex(
    /^(Mon|Tue|Wed|Thu|Fri|Sat|Sun), \d{2} (Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) \d{4} \d{2}:\d{2}:\d{2} GMT$/,
    {
      message: 'expected an HTTP-date',
    },
  )

/** A successful envelope exactly as the given endpoint sends it (provider flags, lastUpdated, data). */
export function successEnvelopeSchema(entry: CatalogEntry) {
  return z.object({
    status: z.literal(200),
    result: z.literal('success'),
    description: z.string().min(1),
    query: z
      .record(z.string(), z.string())
      .refine((query) => !Object.hasOwn(query, 'key'), { message: 'must not echo key' }),
    provider: entry.providerFlags
      ? z.object({ name: z.string(), subscription: z.boolean(), institutionGrade: z.boolean() })
      : z.object({ name: z.string() }),
    // The service sends the sample spellings; the schema is written with canonical names.
    data: z.preprocess((data) => (isRecord(data) ? normaliseData(entry, data) : data), entry.data),
    time: httpDate,
    timestamp: z.number().int().positive(),
    ...(entry.hasLastUpdated ? { lastUpdated: z.number().int().positive() } : {}),
  })
}

/** The error envelope: `result: 'error'`, a 4xx/5xx status and a description. */
export const errorEnvelopeSchema = z.looseObject({
  status: z.number().int().min(400).max(599),
  result: z.literal('error'),
  description: z.string().min(1),
  time: httpDate,
  timestamp: z.number().int().positive(),
})

function isRecord(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value)
}
