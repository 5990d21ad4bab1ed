import type { ValidatedParams } from '../catalog/index.ts'
import type { Answer } from './answer.ts'
import type { Collection } from './data/index.ts'
import { FeedServiceError } from './errors.ts'

function findCollection(
  collections: readonly Collection[],
  address: string,
  param: string,
): Collection {
  const collection = collections.find((candidate) => candidate.contract === address)
  if (!collection) throw new FeedServiceError(404, `no NFT collection at ${param} ${address}`)
  return collection
}

function floorPrice(collection: Collection): number {
  if (collection.floorPrice === null)
    throw new FeedServiceError(
      404,
      `no floor price for ${collection.name}: it is not traded as one collection`,
    )
  return collection.floorPrice
}

export function assetFloorPriceAnswer(
  collections: readonly Collection[],
  params: ValidatedParams,
): Answer {
  const collection = findCollection(
    collections,
    params.asset_contract_address!,
    'asset_contract_address',
  )
  const tokenId = params.token_id!
  // Collections number their items from 0 or from 1: accept 0..totalSupply.
  if (collection.totalSupply !== null && BigInt(tokenId) > BigInt(collection.totalSupply)) {
    throw new FeedServiceError(
      404,
      `no token_id ${tokenId} in ${collection.name} (${collection.totalSupply} items)`,
    )
  }
  const asset = collection.assets[tokenId]
  return {
    description: `Floor price of ${collection.name} for token ${tokenId}`,
    data: {
      name: asset?.name ?? `${collection.name} #${tokenId}`,
      creator: asset?.creator ?? collection.name,
      collection_name: collection.name,
      collection_slug: collection.slug,
      collection_floor_price: floorPrice(collection),
    },
  }
}

export function assetContractAnswer(
  collections: readonly Collection[],
  params: ValidatedParams,
): Answer {
  const collection = findCollection(
    collections,
    params.asset_contract_address!,
    'asset_contract_address',
  )
  return {
    description: `Asset contract ${collection.name}`,
    data: structuredClone(collection.contractRecord),
  }
}

export function collectionFloorPriceAnswer(
  collections: readonly Collection[],
  params: ValidatedParams,
): Answer {
  const collection = findCollection(
    collections,
    params.collection_contract_address!,
    'collection_contract_address',
  )
  return {
    description: `Floor price of the ${collection.name} collection`,
    data: { collection_name: collection.name, floor_price: floorPrice(collection) },
  }
}
