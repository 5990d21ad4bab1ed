import { z } from 'zod'
import { addressParam, tokenIdParam } from './params.ts'
import { numberLike } from './fields.ts'
import type { CatalogEntry } from './types.ts'

const assetContractAddress = addressParam({
  name: 'asset_contract_address',
  description: 'Address of the NFT contract, 0x and 40 hex digits',
  example: '0xbc4ca0eda7647a8ab7c2061c2e118a18a936f13d',
})

export const assetFloorPrice: CatalogEntry = {
  name: 'asset-floor-price',
  family: 'nft',
  path: '/api/v1/asset-floor-price',
  description: "An NFT item with its collection's floor price (ETH)",
  params: {
    asset_contract_address: assetContractAddress,
    token_id: tokenIdParam({ name: 'token_id', description: 'Token id of the item', example: '1' }),
  },
  example: { asset_contract_address: assetContractAddress.example, token_id: '1' },
  identity: ['asset_contract_address', 'token_id'],
  data: z.looseObject({
    name: z.string(),
    creator: z.string(),
    collection_name: z.string(),
    collection_slug: z.string(),
    collection_floor_price: z.number(),
  }),
  aliases: {},
  defaultResultPath: 'collection_floor_price',
  providerFlags: true,
  hasLastUpdated: false,
}

const feeBasisPoints = numberLike

export const assetContract: CatalogEntry = {
  name: 'asset-contract',
  family: 'nft',
  path: '/api/v1/asset-contract',
  description: 'Details of an NFT contract and its collection',
  params: { asset_contract_address: assetContractAddress },
  example: { asset_contract_address: assetContractAddress.example },
  identity: ['asset_contract_address'],
  data: z.looseObject({
    address: z.string(),
    asset_contract_type: z.string(),
    // Listed as one of arbitrum, avalanche, ethereum, klaytn, matic, optimism; absent in older records.
    chain_identifier: z
      .enum(['arbitrum', 'avalanche', 'ethereum', 'klaytn', 'matic', 'optimism'])
      .optional(),
    created_date: z.string(),
    name: z.string(),
    nft_version: z.string().nullable(),
    marketplace_version: z.string().nullable(),
    // "string" in the field table, a number in the sample, null for some contracts.
    owner: z.union([z.number(), z.string()]).nullable(),
    schema_name: z.string(),
    symbol: z.string(),
    total_supply: z.union([z.string(), z.number()]).nullable(),
    description: z.string(),
    external_link: z.string(),
    image_url: z.string(),
    default_to_fiat: z.boolean(),
    dev_buyer_fee_basis_points: feeBasisPoints,
    dev_seller_fee_basis_points: feeBasisPoints,
    only_proxied_transfers: z.boolean(),
    marketplace_buyer_fee_basis_points: feeBasisPoints,
    marketplace_seller_fee_basis_points: feeBasisPoints,
    buyer_fee_basis_points: feeBasisPoints,
    seller_fee_basis_points: feeBasisPoints,
    payout_address: z.string().nullable(),
    collection: z
      .looseObject({
        banner_image_url: z.string().nullable().optional(),
        created_date: z.string().optional(),
        description: z.string().nullable().optional(),
        fees: z.record(z.string(), z.unknown()).optional(),
        image_url: z.string().nullable().optional(),
        name: z.string().optional(),
        payout_address: z.union([z.string(), z.number()]).nullable().optional(),
        slug: z.string().optional(),
      })
      .optional(),
  }),
  // FEEDS.md names the marketplace fields generically; the samples use OpenSea's names.
  aliases: {
    marketplace_version: ['opensea_version'],
    marketplace_buyer_fee_basis_points: ['opensea_buyer_fee_basis_points'],
    marketplace_seller_fee_basis_points: ['opensea_seller_fee_basis_points'],
  },
  defaultResultPath: 'total_supply',
  providerFlags: true,
  hasLastUpdated: false,
}

export const collectionFloorPrice: CatalogEntry = {
  name: 'collection-floor-price',
  family: 'nft',
  path: '/api/v1/collection-floor-price',
  description: 'Floor price (ETH) of an NFT collection',
  params: {
    // FEEDS.md does not mark it required, but the endpoint cannot answer without it: required here.
    collection_contract_address: addressParam({
      name: 'collection_contract_address',
      description: 'Address of the collection contract, 0x and 40 hex digits',
      example: '0xbc4ca0eda7647a8ab7c2061c2e118a18a936f13d',
    }),
  },
  example: { collection_contract_address: '0xbc4ca0eda7647a8ab7c2061c2e118a18a936f13d' },
  identity: ['collection_contract_address'],
  data: z.looseObject({ collection_name: z.string(), floor_price: z.number() }),
  aliases: {},
  defaultResultPath: 'floor_price',
  providerFlags: true,
  hasLastUpdated: false,
}

export const nftEntries = [assetFloorPrice, assetContract, collectionFloorPrice] as const
