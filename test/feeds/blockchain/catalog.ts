import { expect } from 'vitest'
import { feedCatalog } from '../../../src/feeds/catalog/index.ts'

type BlockchainEndpoint = 'account-balance' | 'token-transfers' | 'transaction'

/** The record satisfies the catalog's `data` schema of the endpoint (the single source of truth). */
export function expectCatalogShape(endpoint: BlockchainEndpoint, data: unknown): void {
  const parsed = feedCatalog[endpoint].data.safeParse(data)
  expect(
    parsed.success ? [] : parsed.error.issues,
    `${endpoint} data against the catalog schema`,
  ).toEqual([])
}
