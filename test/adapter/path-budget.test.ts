import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { RunningAdapter } from '../../src/adapter/adapter.ts'
import {
  adapterSettings,
  oddsEnvelope,
  postAdapter,
  sendJson,
  startAdapterWithWorkers,
  startEmulatedFeed,
  type AdapterWithWorkers,
  type EmulatedFeed,
} from './support.ts'

/**
 * The adapter's `path` comes from whoever calls it (a bridge call carries the requester's path). Its
 * evaluation runs in the adapter's own thread: PATH_MAX_VALUES bounds it, and the adapter answers a
 * path over the bound with a 400 naming the setting, then serves the next request.
 */
const game = {
  endpoint: 'game-odds',
  region: 'england',
  sport: 'soccer',
  league: 'epl',
  date: '2024-08-16',
  homeTeam: 'Arsenal',
}

describe("the adapter's path under PATH_MAX_VALUES", () => {
  let feed: EmulatedFeed
  let parts: AdapterWithWorkers
  let adapter: RunningAdapter

  beforeAll(async () => {
    feed = await startEmulatedFeed((query, response) =>
      sendJson(response, 200, oddsEnvelope(query, { home: 1.6, draw: 4.2, away: 5.25 })),
    )
    const settings = adapterSettings('path-budget', feed.url, {
      FEED_API_KEY: 'path-budget-key-7a8b9c',
      RATE_LIMIT_SPORTS_PER_SECOND: '1000',
      PATH_MAX_VALUES: '200',
    })
    parts = await startAdapterWithWorkers(settings)
    adapter = parts.adapter
  })
  afterAll(async () => {
    await parts?.close()
    await feed?.close()
  })

  it('refuses a path that multiplies with a 400 naming the setting, then serves on', async () => {
    // 4^9 = 262,144 matches of one field, without reading anything twice.
    const path = '$' + '[$,$,$,$]'.repeat(9) + '.data.homeMoneyLine'
    const refused = await postAdapter(adapter.url, { ...game, path })
    expect(refused.status).toBe(400)
    expect(refused.text).toContain('more than 200 values (PATH_MAX_VALUES)')
    expect(refused.text.length).toBeLessThan(2_000)
    const served = await postAdapter(adapter.url, { ...game, path: '$.data.homeMoneyLine' })
    expect(served.status).toBe(200)
    expect(served.body.result).toBe(1.6)
  })

  it('lets a wildcard over the answer through, and counts what it returns', async () => {
    const fields = await postAdapter(adapter.url, { ...game, path: '$.data.*' })
    expect(fields.status).toBe(200)
    expect(fields.body.result).toHaveLength(9)
    // The answer's data (10 values) 30 times over: 300 values returned, over 200.
    const many = await postAdapter(adapter.url, {
      ...game,
      path: `$[${Array(30).fill('$').join(',')}].data`,
    })
    expect(many.status).toBe(400)
    expect(many.text).toContain('(PATH_MAX_VALUES)')
  })
})
