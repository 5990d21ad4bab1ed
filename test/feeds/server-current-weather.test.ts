import { describe, expect, it } from 'vitest'
import { feedCatalog } from '../../src/feeds/catalog/index.ts'
import { createFeedServer } from '../../src/feeds/server/index.ts'
import { get, TEST_KEY } from './support.ts'

// No shared service: the first test starts its own servers, each with its own clock.
describe('local Data Feed Query Service: current weather', () => {
  it('gives every node the same current weather within an hour, and new weather the next hour', async () => {
    const hour = Date.UTC(2025, 6, 1, 10)
    const answers: unknown[] = []
    for (const now of [hour + 60_000, hour + 3_500_000, hour + 3_700_000]) {
      const server = createFeedServer({ keys: [TEST_KEY], now: () => now })
      const url = await server.listen(0)
      answers.push(
        (
          await get(url, feedCatalog.weather.path, {
            ...feedCatalog.weather.example,
            key: TEST_KEY,
          })
        ).body.data,
      )
      await server.close()
    }
    expect(answers[1]).toEqual(answers[0])
    expect(answers[2]).not.toEqual(answers[0])
  })

  it('refuses to start without any key or signer', () => {
    expect(() => createFeedServer({})).toThrow(/at least one key/)
  })
})
