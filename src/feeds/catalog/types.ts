import type { z } from 'zod'
import type { FeedFamily } from '../../config/settings.ts'

/** The adapter endpoint names (DESIGN.md); one catalog entry each. */
export const ENDPOINT_NAMES = [
  'game-odds',
  'boxscores',
  'player-boxscores',
  'account-balance',
  'token-transfers',
  'transaction',
  'asset-floor-price',
  'asset-contract',
  'collection-floor-price',
  'weather',
] as const
export type EndpointName = (typeof ENDPOINT_NAMES)[number]

/**
 * One query parameter, kept as plain data so other parts (the adapter's input parameters, the
 * README table, the local server) can read it without running zod.
 */
export interface ParamSpec {
  /** The service's own name (`homeTeam`, `asset_contract_address`, ...). */
  readonly name: string
  readonly description: string
  /** A real value from the data set. */
  readonly example: string
  /** Required on its own; weather's address/coordinate params are optional here and checked by `refine`. */
  readonly required: boolean
  /** The allowed values when the parameter is an enumeration (compared case-insensitively). */
  readonly options?: readonly string[]
  /** Value used when the parameter is absent. */
  readonly default?: string
  /** Validates and normalises one value: string in, normalised string out. */
  readonly schema: z.ZodType<string, string>
}

/** A problem with one request parameter; `param` names it, `message` says what was expected. */
export interface ParamIssue {
  readonly param: string
  readonly message: string
}

/** A documented parameter combination of an endpoint (weather has three). */
export interface EndpointVariant {
  readonly name: string
  readonly description: string
  /** Parameters this variant needs (besides `key`). */
  readonly params: readonly string[]
  readonly example: Readonly<Record<string, string>>
}

export interface CatalogEntry {
  readonly name: EndpointName
  readonly family: FeedFamily
  /** Path under the family's base URL, e.g. `/api/v4/game-odds`. */
  readonly path: string
  readonly description: string
  readonly params: Readonly<Record<string, ParamSpec>>
  /** Checks across parameters (weather's variants), after each parameter passed its own schema. */
  readonly refine?: (params: Readonly<Record<string, string>>) => ParamIssue[]
  readonly variants?: readonly EndpointVariant[]
  /** A complete, valid example request (without `key`) from the data set. */
  readonly example: Readonly<Record<string, string>>
  /** The parameters whose values identify a request (cache keys, request coalescing). */
  readonly identity: readonly string[]
  /**
   * Schema of the envelope's `data`, written with canonical field names; it is applied after
   * `normaliseData` has added the canonical twins of aliased fields. Unknown fields pass through.
   */
  readonly data: z.ZodType<Record<string, unknown>>
  /** Canonical field name -> every other spelling seen in the service's documents and samples. */
  readonly aliases: Readonly<Record<string, readonly string[]>>
  /** Path (in `data`) of the natural single result, when there is one. */
  readonly defaultResultPath?: string
  /** Provider block of the envelope: sports and NFT carry the subscription flags. */
  readonly providerFlags: boolean
  /** Sports odds and boxscores carry `lastUpdated` in the envelope. */
  readonly hasLastUpdated: boolean
}
