import { Wallet } from 'ethers'
import { describe, expect, it } from 'vitest'
import { ANVIL_PRIVATE_KEYS } from '../../src/dev/anvil.ts'
import { feedCatalog } from '../../src/feeds/catalog/index.ts'
import { createSignKey } from '../../src/signkey/index.ts'
import { useFeedService } from './support.ts'

const node = new Wallet(ANVIL_PRIVATE_KEYS[1]!)
const service = useFeedService({ signers: [node.address] })
const call = service.call

describe('local Data Feed Query Service: signed keys and counters', () => {
  const params = { collection_contract_address: '0xbc4ca0eda7647a8ab7c2061c2e118a18a936f13d' }
  const sign = (overrides: Partial<Parameters<typeof createSignKey>[0]> = {}) =>
    createSignKey({
      privateKey: node.privateKey,
      requestId: 'r1',
      endpoint: 'collection-floor-price',
      params,
      ttlSeconds: 60,
      ...overrides,
    })

  it('accepts a signed key of an accepted node for its own request', async () => {
    const { status, body } = await call('collection-floor-price', params, await sign())
    expect(status).toBe(200)
    expect(body.data).toMatchObject({ floor_price: 48 })
  })

  it('accepts a signed key once: a captured key cannot be replayed', async () => {
    const signed = await sign({ requestId: 'r-once' })
    expect((await call('collection-floor-price', params, signed)).status).toBe(200)
    const replay = await call('collection-floor-price', params, signed)
    expect(replay.body).toMatchObject({
      status: 401,
      description: 'parameter key is not valid: signed key was already used',
    })
  })

  it('refuses signed keys for other parameters, expired, or from another node', async () => {
    const replayed = await call(
      'collection-floor-price',
      { collection_contract_address: '0x60e4d786628fea6478f785a6d7e704777c86a7c6' },
      await sign(),
    )
    expect(replayed.status).toBe(401)
    expect(replayed.body.description).toContain('issued for other parameters')
    const expired = await call(
      'collection-floor-price',
      params,
      await sign({ now: Date.now() - 120_000 }),
    )
    expect(expired.body).toMatchObject({
      status: 401,
      description: 'parameter key is not valid: signed key has expired',
    })
    const stranger = await call(
      'collection-floor-price',
      params,
      await sign({ privateKey: ANVIL_PRIVATE_KEYS[3]! }),
    )
    expect(stranger.status).toBe(401)
    expect(stranger.body.description).toContain('is not an accepted node')
  })

  it('counts requests per route and serves the counts at /_stats', async () => {
    const path = feedCatalog['asset-contract'].path
    const before = service.server.requestCount(path)
    await call('asset-contract', feedCatalog['asset-contract'].example)
    await call('asset-contract', { asset_contract_address: 'bad' })
    expect(service.server.requestCount(path)).toBe(before + 2)
    const stats = (await (await fetch(`${service.url}/_stats`)).json()) as {
      requests: Record<string, number>
    }
    expect(stats.requests[path]).toBe(before + 2)
  })
})
