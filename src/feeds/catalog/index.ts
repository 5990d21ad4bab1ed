import type { FeedFamily } from '../../config/settings.ts'
import { blockchainEntries } from './blockchain.ts'
import { nftEntries } from './nft.ts'
import { sportsEntries } from './sports.ts'
import { ENDPOINT_NAMES, type CatalogEntry, type EndpointName } from './types.ts'
import { weather } from './weather.ts'

export {
  ENDPOINT_NAMES,
  type CatalogEntry,
  type EndpointName,
  type EndpointVariant,
  type ParamIssue,
  type ParamSpec,
} from './types.ts'
export {
  FeedParamsError,
  formatIssues,
  paramsSchema,
  parseParams,
  validateParams,
  type ParamsValidation,
  type ValidatedParams,
} from './validate.ts'
export { FeedDataError, normaliseData, parseFeedData } from './data.ts'
export {
  envelopeSchema,
  errorEnvelopeSchema,
  successEnvelopeSchema,
  type Envelope,
} from './envelope.ts'
export { SPORTS, SPORTS_REGIONS } from './sports.ts'
export {
  UNITS_OF_MEASURE,
  weatherVariant,
  weatherVariants,
  type WeatherVariantName,
} from './weather.ts'
export { isCalendarDate } from './params.ts'

/** Every endpoint of the Data Feed Query Service, keyed by adapter endpoint name. The single source of truth. */
export const feedCatalog: Readonly<Record<EndpointName, CatalogEntry>> = Object.freeze(
  Object.fromEntries(
    [...sportsEntries, ...blockchainEntries, ...nftEntries, weather].map((entry) => [
      entry.name,
      entry,
    ]),
  ) as Record<EndpointName, CatalogEntry>,
)

/** The entries in catalog order (sports, blockchain, NFT, weather). */
export const catalogEntries: readonly CatalogEntry[] = ENDPOINT_NAMES.map(
  (name) => feedCatalog[name],
)

export function isEndpointName(name: unknown): name is EndpointName {
  return typeof name === 'string' && (ENDPOINT_NAMES as readonly string[]).includes(name)
}

/** The entry of an endpoint, or undefined for an unknown name. */
export function findEndpoint(name: string): CatalogEntry | undefined {
  return isEndpointName(name) ? feedCatalog[name] : undefined
}

/** The entry of an endpoint; throws naming the known endpoints when the name is unknown. */
export function getEndpoint(name: string): CatalogEntry {
  const entry = findEndpoint(name)
  if (!entry)
    throw new Error(
      `unknown feed endpoint ${JSON.stringify(name)} (expected one of ${ENDPOINT_NAMES.join(', ')})`,
    )
  return entry
}

export function entriesOfFamily(family: FeedFamily): CatalogEntry[] {
  return catalogEntries.filter((entry) => entry.family === family)
}

/** The entry served at an upstream path (`/api/v4/game-odds`), for the local service's routing. */
export function entryByPath(path: string): CatalogEntry | undefined {
  return catalogEntries.find((entry) => entry.path === path)
}
