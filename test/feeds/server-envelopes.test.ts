import { Wallet } from 'ethers'
import { describe, expect, it } from 'vitest'
import { ANVIL_PRIVATE_KEYS } from '../../src/dev/anvil.ts'
import {
  catalogEntries,
  feedCatalog,
  successEnvelopeSchema,
  type CatalogEntry,
} from '../../src/feeds/catalog/index.ts'
import { useFeedService } from './support.ts'

// account-balance is answered from the dev chain: this file's service has one.
const service = useFeedService({ withChain: true })
const call = service.call

/** Example parameters each endpoint can answer here (blockchain balance on the dev chain). */
function answerableExample(entry: CatalogEntry): Record<string, string> {
  if (entry.name === 'account-balance')
    return { blockchain: 'local', address: new Wallet(ANVIL_PRIVATE_KEYS[0]!).address }
  return { ...entry.example }
}

function expectValid(entry: CatalogEntry, body: unknown): void {
  const parsed = successEnvelopeSchema(entry).safeParse(body)
  expect(parsed.success, `${entry.name}: ${JSON.stringify(parsed.error?.issues[0])}`).toBe(true)
}

describe('local Data Feed Query Service: envelopes', () => {
  it.each(catalogEntries.map((entry) => [entry.name, entry] as const))(
    '%s answers a valid envelope',
    async (_name, entry) => {
      const params = answerableExample(entry)
      const { status, body } = await call(entry.name, params)
      expect(status).toBe(200)
      expectValid(entry, body)
      expect(body.query).toEqual(params)
      expect(new Date(body.time as string).getTime()).toBe(
        Math.floor((body.timestamp as number) / 1000) * 1000,
      )
    },
  )

  it.each((feedCatalog.weather.variants ?? []).map((variant) => [variant.name, variant] as const))(
    'weather %s answers a valid envelope',
    async (_name, variant) => {
      const { status, body } = await call('weather', variant.example)
      expect(status).toBe(200)
      expectValid(feedCatalog.weather, body)
      const data = body.data as Record<string, unknown>
      expect(data.unitOfMeasure).toBe(variant.example.unitOfMeasure)
      for (const [camel, lower] of [
        ['windGust', 'windgust'],
        ['windDir', 'winddir'],
        ['windSpeed', 'windspeed'],
        ['solarRadiation', 'solarradiation'],
        ['solarEnergy', 'solarenergy'],
        ['uvIndex', 'uvindex'],
      ]) {
        expect(data[lower!], lower).toBe(data[camel!])
      }
    },
  )
})
