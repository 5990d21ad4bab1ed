import type { EndpointName, ValidatedParams } from '../catalog/index.ts'
import type { Answer } from './answer.ts'
import type { BlockchainSource } from './blockchain/index.ts'
import type { FeedDataSet } from './data/index.ts'
import { assetContractAnswer, assetFloorPriceAnswer, collectionFloorPriceAnswer } from './nft.ts'
import { boxscoresAnswer, gameOddsAnswer, playerBoxscoresAnswer } from './sports.ts'
import { weatherAnswer } from './weather.ts'

export interface RouteContext {
  data: FeedDataSet
  /** Created on first use: the blockchain module is heavy to load and most runs never need it. */
  blockchain: () => Promise<BlockchainSource>
  now: number
}

type Handler = (params: ValidatedParams, context: RouteContext) => Answer | Promise<Answer>

/** One handler per catalog endpoint: the compiler insists every endpoint has one. */
export const routeHandlers: Record<EndpointName, Handler> = {
  'game-odds': (params, { data }) => gameOddsAnswer(data.games, params),
  boxscores: (params, { data }) => boxscoresAnswer(data.games, params),
  'player-boxscores': (params, { data }) => playerBoxscoresAnswer(data.games, params),
  'account-balance': async (params, { blockchain }) => ({
    description: `Balance of ${params.address} on ${params.blockchain}`,
    data: await (
      await blockchain()
    ).accountBalance({ blockchain: params.blockchain!, address: params.address! }),
  }),
  'token-transfers': async (params, { blockchain }) => ({
    description: `Token transfer of transaction ${params.hash} on ${params.blockchain}`,
    data: await (
      await blockchain()
    ).tokenTransfers({ blockchain: params.blockchain!, hash: params.hash! }),
  }),
  transaction: async (params, { blockchain }) => ({
    description: `Transaction ${params.hash} on ${params.blockchain}`,
    data: await (
      await blockchain()
    ).transaction({ blockchain: params.blockchain!, hash: params.hash! }),
  }),
  'asset-floor-price': (params, { data }) => assetFloorPriceAnswer(data.collections, params),
  'asset-contract': (params, { data }) => assetContractAnswer(data.collections, params),
  'collection-floor-price': (params, { data }) =>
    collectionFloorPriceAnswer(data.collections, params),
  weather: (params, { data, now }) => weatherAnswer(data.cities, data.weatherRanges, params, now),
}
