import { readFileSync } from 'node:fs'
import { z } from 'zod'
import { FeedServiceError } from '../errors.ts'

// Real ethereum-mainnet records, shipped in ./recorded (copied from the reference samples into the
// FEEDS.md shapes; each record names its source and what was changed). No one can reach mainnet
// from a test, so `ethereum-mainnet` is answered from these unless a node URL is configured for it.

export const RECORDED_BLOCKCHAIN = 'ethereum-mainnet'

const recordFile = <T extends z.ZodType>(record: T) =>
  z.object({ about: z.string(), records: z.array(record) })

const transactionsFile = recordFile(
  z.object({
    source: z.string(),
    changes: z.string(),
    data: z.looseObject({ hash: z.string().regex(/^0x[0-9a-f]{64}$/) }),
  }),
)
const tokenTransfersFile = recordFile(
  z.object({
    source: z.string(),
    changes: z.string(),
    hash: z.string().regex(/^0x[0-9a-f]{64}$/),
    data: z.looseObject({ amount: z.string(), tokenAddress: z.string() }),
  }),
)

function load<T extends z.ZodType>(name: string, schema: T): z.output<T> {
  const url = new URL(`./recorded/${name}`, import.meta.url)
  const parsed = schema.safeParse(JSON.parse(readFileSync(url, 'utf8')))
  if (!parsed.success)
    throw new Error(`recorded blockchain data ${name} is malformed: ${parsed.error.message}`)
  return parsed.data
}

/** The recorded data, keyed by lowercase transaction hash. Loaded once, on first use. */
class Recording {
  readonly transactions: ReadonlyMap<string, Record<string, unknown>>
  readonly tokenTransfers: ReadonlyMap<string, Record<string, unknown>>

  constructor() {
    this.transactions = new Map(
      load('transactions.json', transactionsFile).records.map((record) => [
        record.data.hash,
        record.data,
      ]),
    )
    this.tokenTransfers = new Map(
      load('token-transfers.json', tokenTransfersFile).records.map((record) => [
        record.hash,
        record.data,
      ]),
    )
  }
}

let recording: Recording | undefined
function loaded(): Recording {
  recording ??= new Recording()
  return recording
}

/** A deep copy, so a caller that edits its answer cannot change the recording. */
function copy(record: Record<string, unknown>): Record<string, unknown> {
  return structuredClone(record)
}

function notRecorded(what: string, hashes: Iterable<string>): FeedServiceError {
  return new FeedServiceError(
    404,
    `${what} is not available: blockchain '${RECORDED_BLOCKCHAIN}' is served from recorded mainnet data only (no node URL is configured for it). Recorded: ${[...hashes].join(', ')}`,
  )
}

export function recordedTransaction(hash: string): Record<string, unknown> {
  const record = loaded().transactions.get(hash.toLowerCase())
  if (record === undefined) throw notRecorded(`transaction ${hash}`, loaded().transactions.keys())
  return copy(record)
}

export function recordedTokenTransfers(hash: string): Record<string, unknown> {
  const record = loaded().tokenTransfers.get(hash.toLowerCase())
  if (record === undefined)
    throw notRecorded(`token transfers of transaction ${hash}`, loaded().tokenTransfers.keys())
  return copy(record)
}

export function recordedAccountBalance(address: string): never {
  throw new FeedServiceError(
    404,
    `the balance of ${address} is not available: blockchain '${RECORDED_BLOCKCHAIN}' is served from recorded mainnet data only (recorded transactions and token transfers, no balances); configure a node URL for '${RECORDED_BLOCKCHAIN}' to answer it live`,
  )
}

/** Hashes of the recorded transactions and token transfers (for tests and documentation). */
export function recordedHashes(): { transactions: string[]; tokenTransfers: string[] } {
  return {
    transactions: [...loaded().transactions.keys()],
    tokenTransfers: [...loaded().tokenTransfers.keys()],
  }
}
