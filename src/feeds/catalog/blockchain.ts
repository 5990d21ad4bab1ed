import { z } from 'zod'
import { addressParam, chainIdParam, hashParam } from './params.ts'
import { booleanLike, integerString, numberLike } from './fields.ts'
import type { CatalogEntry } from './types.ts'

const blockchain = chainIdParam({
  name: 'blockchain',
  description:
    'Chain identifier, e.g. ethereum-mainnet (the local service also serves the chains it is given, e.g. local)',
  example: 'ethereum-mainnet',
})
const hash = hashParam({
  name: 'hash',
  description: 'Transaction hash, 0x and 64 hex digits',
  example: '0x133f293b44b2eb632a26e8f7c972ad0f6152ca5c78377102e6804c46ebde6c83',
})

export const accountBalance: CatalogEntry = {
  name: 'account-balance',
  family: 'blockchain',
  path: '/api/v1/account-balance',
  description: 'Balance of an address at the latest block, in the smallest unit',
  params: {
    blockchain,
    address: addressParam({
      name: 'address',
      description: 'Account address, 0x and 40 hex digits',
      example: '0x06012c8cf97bead5deae237070f9587f8e7a266d',
    }),
  },
  example: {
    blockchain: 'ethereum-mainnet',
    address: '0x06012c8cf97bead5deae237070f9587f8e7a266d',
  },
  identity: ['blockchain', 'address'],
  data: z.looseObject({
    address: z.string(),
    blockNumber: integerString,
    timestamp: z.string(),
    balance: integerString,
  }),
  aliases: {},
  defaultResultPath: 'balance',
  providerFlags: false,
  hasLastUpdated: false,
}

export const tokenTransfers: CatalogEntry = {
  name: 'token-transfers',
  family: 'blockchain',
  path: '/api/v1/token-transfers',
  description: 'Token transfer made by a transaction (ERC20 amount, or the token id for ERC721)',
  params: { blockchain, hash },
  // A LINK transfer on mainnet (recorded in the local service's data).
  example: {
    blockchain: 'ethereum-mainnet',
    hash: '0x39c87b282b46ff70e78ed985a54d93dfee45cf6c8a3c6f900f6fe60023398aae',
  },
  identity: ['blockchain', 'hash'],
  data: z.looseObject({
    amount: integerString,
    from: z.string(),
    to: z.string(),
    // "string" in the field table, a number in the sample.
    logIndex: numberLike,
    tokenAddress: z.string(),
    decimals: numberLike,
    name: z.string(),
    symbol: z.string(),
    isERC20: booleanLike,
    isERC721: booleanLike,
    isERC777: booleanLike,
    isERC884: booleanLike,
    isERC998: booleanLike,
    isERC1155: booleanLike,
  }),
  aliases: {},
  defaultResultPath: 'amount',
  providerFlags: false,
  hasLastUpdated: false,
}

const addressEntry = z.looseObject({ address: z.string(), nameNormalized: z.string().optional() })

export const transaction: CatalogEntry = {
  name: 'transaction',
  family: 'blockchain',
  path: '/api/v1/transaction',
  description: 'Full record of a transaction: block, gas, fee, status, signature',
  params: { blockchain, hash },
  example: { blockchain: 'ethereum-mainnet', hash: hash.example },
  identity: ['blockchain', 'hash'],
  data: z.looseObject({
    // A pending transaction (no receipt yet) has no block, gas used, fee, bloom or status: null, as Amberdata sends it.
    blockNumber: integerString.nullable(),
    blockHash: z.string().nullable(),
    confirmations: integerString,
    // The string "null" when the transaction created no contract.
    contractAddress: z.string(),
    cumulativeGasUsed: integerString.nullable(),
    fee: integerString.nullable(),
    from: z.array(addressEntry),
    gasLimit: integerString,
    gasPrice: integerString,
    gasUsed: integerString.nullable(),
    hash: z.string(),
    index: numberLike.nullable(),
    input: z.string(),
    logsBloom: z.string().nullable(),
    maxFeePerGas: numberLike.nullable(),
    maxPriorityFeePerGas: numberLike.nullable(),
    nonce: integerString,
    publicKey: z.string(),
    r: z.string(),
    raw: z.string(),
    root: z.string(),
    s: z.string(),
    status: z.string().nullable(),
    timestamp: z.string(),
    to: z.array(addressEntry),
    type: z.union([z.string(), z.number()]).nullable(),
    v: numberLike,
    value: integerString,
    statusResult: z.looseObject({
      code: z.string().nullable(),
      confirmed: z.boolean(),
      success: z.boolean().nullable(),
      name: z.string(),
    }),
  }),
  aliases: {},
  defaultResultPath: 'statusResult.success',
  providerFlags: false,
  hasLastUpdated: false,
}

export const blockchainEntries = [accountBalance, tokenTransfers, transaction] as const
