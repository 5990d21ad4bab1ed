/**
 * The bare fulfiller (`node --import tsx bench/runner/bare-fulfiller.ts`, started by the bench's bare
 * phase): the ceiling of "a fulfiller for this job on this chain", one process and one key with no
 * adapter, no queue and no Redis. It does what a request needs and nothing else, as fast as it can:
 *
 * - OracleRequest logs of the job arrive over one `eth_subscribe` `logs` subscription on the chain's
 *   WebSocket (no polling); the logs of one tick are handled together, each read by slicing the
 *   Operator's layout as the runner's listener does (`readCanonicalOracleRequest`);
 * - parameters are decoded from the request's CBOR (cbor-x, as the `cborparse` task does), the feed is
 *   fetched from the local feed service over HTTP with the project's client (`fetchFeed`: parameters,
 *   `##signKey`, envelope and data checked), equal parameters fetched once per the family's cache TTL as
 *   the adapter's cache does, the value reduced with `src/reduce` (path, uint256, times), the callback
 *   data and the `fulfillOracleRequest2` call encoded as words as the runner's `ethabiencode` does;
 * - each fulfilment is signed with the project's signer (`createTxSigner`, hashing with the
 *   WebAssembly Keccak every feedrunner process installs) on a local nonce counter, and
 *   what was signed while a batch was out leaves as the next JSON-RPC batch, in nonce order (anvil
 *   answers `eth_sendRawTransaction` once the transaction is in its pool, and a later nonce sent first
 *   can stay there: foundry-rs/foundry#10122); at each new head the key's mined nonce is read, and the
 *   receipts of the transactions it passed are asked for in one batch (each receipt read once, as the
 *   runner's confirmer does).
 *
 * No sleeps: every step waits only for the answer it needs. Settings come from the environment:
 * BARE_RPC_URL (http), BARE_WS_URL, BARE_KEY, BARE_OPERATOR, BARE_EXTERNAL_JOB_ID, BARE_CHAIN_ID, and
 * feedrunner's own SPORTS_URL (and the other families') and FEED_API_KEY.
 */
import { Decoder } from 'cbor-x'
import { WebSocket, type RawData } from 'ws'
import { postJsonRpcBatch } from '../../src/chain/sender/json-rpc-batch.ts'
import { operatorInterface, ORACLE_REQUEST_TOPIC, specIdsOfJob } from '../../src/chain/operator.ts'
import {
  readCanonicalOracleRequest,
  type OracleRequestFields,
} from '../../src/chain/oracle-request-data.ts'
import { encodeWords } from '../../src/pipeline/tasks/abi-words.ts'
import { createTxSigner } from '../../src/chain/sender/tx-signer.ts'
import { useWasmKeccak } from '../../src/chain/keccak.ts'
import { familyCacheTtlMs, parseSettings, type Settings } from '../../src/config/settings.ts'
import { getEndpoint } from '../../src/feeds/catalog/index.ts'
import { fetchFeed } from '../../src/feeds/client.ts'
import { reduce } from '../../src/reduce/index.ts'

const ENDPOINT = getEndpoint('game-odds')
const GAS_LIMIT = 500_000
const PRIORITY_FEE = 10n ** 9n
const cbor = new Decoder({ mapsAsObjects: false, useRecords: false })
const FULFIL_SELECTOR = operatorInterface.getFunction('fulfillOracleRequest2')!.selector

interface RpcLog {
  topics: string[]
  data: string
}

function env(name: string): string {
  const value = process.env[name]
  if (!value) throw new Error(`${name} is not set (the bench's bare phase sets it)`)
  return value
}

/** The request's parameters: the CBOR map body, decoded as the `cborparse` task's diet mode does. */
function paramsOf(cborHex: string): Record<string, unknown> {
  const body = Buffer.from(cborHex.slice(2), 'hex')
  const decoded = cbor.decode(Buffer.concat([Buffer.from([0xbf]), body, Buffer.from([0xff])]))
  return Object.fromEntries(decoded instanceof Map ? decoded : Object.entries(decoded))
}

/** Fetches a game's feed once per cache TTL for equal parameters (in flight or done), as the adapter's cache does. */
function cachedFeed(settings: Settings): (params: Record<string, unknown>) => Promise<unknown> {
  const ttlMs = familyCacheTtlMs(settings, ENDPOINT.family)
  const cache = new Map<string, { at: number; envelope: Promise<unknown> }>()
  return (params) => {
    const query = Object.fromEntries(ENDPOINT.identity.map((name) => [name, params[name]]))
    const cacheKey = JSON.stringify(query)
    const hit = cache.get(cacheKey)
    if (hit && performance.now() - hit.at < ttlMs) return hit.envelope
    const envelope = fetchFeed(ENDPOINT.name, { ...query, key: '##signKey' }, { settings }).then(
      (result) => result.envelope,
    )
    envelope.catch(() => cache.delete(cacheKey))
    cache.set(cacheKey, { at: performance.now(), envelope })
    return envelope
  }
}

type Counts = { fulfilled: number; failed: number }

/** The key's next nonce and the fee every fulfilment pays (three base fees and the tip). */
async function startingPoint(rpcUrl: string, address: string) {
  const [nonceAnswer, blockAnswer] = await postJsonRpcBatch(rpcUrl, [
    ['eth_getTransactionCount', [address, 'pending']],
    ['eth_getBlockByNumber', ['latest', false]],
  ])
  if (!nonceAnswer?.ok || !blockAnswer?.ok)
    throw new Error('the node did not give a nonce and fees')
  const baseFee = BigInt((blockAnswer.result as { baseFeePerGas: string }).baseFeePerGas)
  return { nonce: Number(nonceAnswer.result), maxFeePerGas: baseFee * 3n + PRIORITY_FEE }
}

/**
 * The sending half: what is signed waits for the batch in flight to be answered, then goes as the
 * next JSON-RPC batch, in signing (nonce) order; each sent transaction's receipt is watched.
 */
function batchSender(
  rpcUrl: string,
  receipts: ReturnType<typeof receiptWatcher>,
  counts: Counts,
): { signed: Signed[]; send(): Promise<void> } {
  const signed: Signed[] = []
  let sending = false
  const send = async (): Promise<void> => {
    if (sending || signed.length === 0) return
    sending = true
    const batch = signed.splice(0)
    try {
      const outcomes = await postJsonRpcBatch(
        rpcUrl,
        batch.map(({ raw }) => ['eth_sendRawTransaction', [raw]] as const),
      )
      const sent = outcomes.flatMap((outcome, index) => {
        if (outcome.ok) return [{ hash: outcome.result as string, nonce: batch[index]!.nonce }]
        console.error(`eth_sendRawTransaction: ${outcome.message}`)
        counts.failed++
        return []
      })
      receipts.add(sent)
    } finally {
      sending = false
      void send()
    }
  }
  return { signed, send }
}

/**
 * The fulfilling half: an OracleRequest log read as the runner reads it (the Operator's layout, by
 * slicing), its game fetched (cached), reduced, encoded as words and signed on the next nonce.
 */
function fulfiller(
  settings: Settings,
  start: { nonce: number; maxFeePerGas: bigint },
  out: Signed[],
): (log: RpcLog) => Promise<void> {
  const operator = env('BARE_OPERATOR')
  const chainId = Number(env('BARE_CHAIN_ID'))
  const signer = createTxSigner(env('BARE_KEY'))
  const feed = cachedFeed(settings)
  let nonce = start.nonce
  return async (log) => {
    const event = readCanonicalOracleRequest(log.data, log.topics)
    if (!event) throw new Error('an OracleRequest log not in the Operator layout')
    const params = paramsOf(event.data)
    const value = reduce(await feed(params), {
      path: String(params.path),
      type: 'uint256',
      times: params.times,
      aliases: ENDPOINT.aliases,
    })
    const txNonce = nonce++
    const tx = signer.sign({
      type: 2,
      chainId,
      nonce: txNonce,
      to: operator,
      data: fulfilmentCalldata(event, value),
      gasLimit: GAS_LIMIT,
      maxFeePerGas: start.maxFeePerGas,
      maxPriorityFeePerGas: PRIORITY_FEE,
    })
    out.push({ raw: tx.raw, nonce: txNonce })
  }
}

async function main(): Promise<void> {
  // Every feedrunner process hashes with WebAssembly Keccak (src/cli/main.ts); so does the ceiling.
  await useWasmKeccak()
  const settings = parseSettings(process.env)
  const rpcUrl = env('BARE_RPC_URL')
  const address = createTxSigner(env('BARE_KEY')).address
  const counts: Counts = { fulfilled: 0, failed: 0 }
  const receipts = receiptWatcher(rpcUrl, address, counts)
  const sender = batchSender(rpcUrl, receipts, counts)
  const fulfil = fulfiller(settings, await startingPoint(rpcUrl, address), sender.signed)
  // The logs of one tick are handled together: equal parameters share a fetch, signatures share a batch.
  let arrived: RpcLog[] = []
  const handleArrived = async (): Promise<void> => {
    const logs = arrived
    arrived = []
    // Nonces are taken in log order once every value of the tick is known.
    const prepared = await Promise.allSettled(logs.map((log) => fulfil(log)))
    for (const result of prepared)
      if (result.status === 'rejected') {
        counts.failed++
        console.error(`request not fulfilled: ${String(result.reason)}`)
      }
    void sender.send()
  }
  await subscribe(env('BARE_WS_URL'), env('BARE_OPERATOR'), env('BARE_EXTERNAL_JOB_ID'), {
    log: (log) => {
      if (arrived.length === 0) setImmediate(() => void handleArrived())
      arrived.push(log)
    },
    head: () => receipts.onHead(),
  })
  console.log(`bare fulfiller listening as ${address}`)
  process.once('SIGTERM', () => {
    console.log(`bare fulfiller: ${counts.fulfilled} fulfilled, ${counts.failed} failed`)
    process.exit(0)
  })
}

/** A signed fulfilment waiting for the next batch; its nonce tells later when it is mined. */
interface Signed {
  raw: string
  nonce: number
}

/** A fulfilment the node took, waiting for its receipt. */
interface Sent {
  hash: string
  nonce: number
}

/**
 * `fulfillOracleRequest2` with the callback data `abi.encode(requestId, value)`, encoded as words (the
 * runner's `ethabiencode` path). Only strings can make `encodeWords` answer undefined, and there are none.
 */
function fulfilmentCalldata(event: OracleRequestFields, value: unknown): string {
  const callbackData = encodeWords(['fixedBytes', 'number'], [event.requestId, value], '0x')
  const calldata =
    callbackData &&
    encodeWords(
      ['fixedBytes', 'number', 'address', 'fixedBytes', 'number', 'bytes'],
      [
        event.requestId,
        event.payment,
        event.callbackAddr,
        event.callbackFunctionId,
        event.cancelExpiration,
        callbackData,
      ],
      FULFIL_SELECTOR,
    )
  if (calldata === undefined) throw new Error('the fulfilment could not be encoded')
  return calldata
}

/**
 * The receipts still to be read. anvil answers `eth_sendRawTransaction` before the block that holds the
 * transaction is mined, so at each new head the key's mined nonce is read first, and only the
 * transactions below it have their receipts asked for, in one batch: each receipt is read once.
 * (Asking at each head for every receipt still waiting read about 29 receipts per fulfilment, and a
 * loop about 120: CPU in anvil and here that no fulfiller needs to spend.)
 */
function receiptWatcher(
  rpcUrl: string,
  address: string,
  counts: { fulfilled: number; failed: number },
): { add(sent: readonly Sent[]): void; onHead(): void } {
  // In nonce order: sends leave in nonce order and are added as they are answered.
  let waiting: Sent[] = []
  let reading = false
  let headSinceRead = false
  const readReceipts = async (): Promise<void> => {
    const [minedAnswer] = await postJsonRpcBatch(rpcUrl, [
      ['eth_getTransactionCount', [address, 'latest']],
    ])
    if (!minedAnswer?.ok) throw new Error(`eth_getTransactionCount: ${minedAnswer?.message}`)
    const mined = Number(minedAnswer.result)
    const below = waiting.findIndex((sent) => sent.nonce >= mined)
    const asked = waiting.splice(0, below < 0 ? waiting.length : below)
    if (asked.length === 0) return
    try {
      const outcomes = await postJsonRpcBatch(
        rpcUrl,
        asked.map(({ hash }) => ['eth_getTransactionReceipt', [hash]] as const),
      )
      const notYet = asked.filter((sent, index) => {
        const outcome = outcomes[index]
        const receipt = outcome?.ok ? (outcome.result as { status?: string } | null) : null
        if (receipt?.status === '0x1') counts.fulfilled++
        else if (receipt) counts.failed++
        return !receipt
      })
      waiting = [...notYet, ...waiting]
    } catch (error) {
      waiting = [...asked, ...waiting]
      throw error
    }
  }
  const read = async (): Promise<void> => {
    if (reading || waiting.length === 0) return
    reading = true
    headSinceRead = false
    try {
      await readReceipts()
    } catch (error) {
      // The node did not answer: one line, and the receipts are asked for again at the next head.
      console.error(`receipts: ${(error as Error).message}`)
    } finally {
      reading = false
      // A head that came while this read was out may have mined more.
      if (headSinceRead) void read()
    }
  }
  return {
    add: (sent) => void waiting.push(...sent),
    onHead: () => {
      headSinceRead = true
      void read()
    },
  }
}

/**
 * Two subscriptions on one socket: the job's OracleRequest logs on the Operator, and new heads (they
 * wake the receipt reads). Resolves once both are live.
 */
function subscribe(
  wsUrl: string,
  operator: string,
  externalJobId: string,
  on: { log(log: RpcLog): void; head(): void },
): Promise<void> {
  const socket = new WebSocket(wsUrl)
  const filter = { address: operator, topics: [ORACLE_REQUEST_TOPIC, specIdsOfJob(externalJobId)] }
  const calls = [
    { jsonrpc: '2.0', id: 1, method: 'eth_subscribe', params: ['logs', filter] },
    { jsonrpc: '2.0', id: 2, method: 'eth_subscribe', params: ['newHeads'] },
  ]
  let live = 0
  return new Promise((resolveLive, reject) => {
    socket.once('error', reject)
    socket.once('close', () => reject(new Error(`${wsUrl} closed the subscription`)))
    socket.once('open', () => calls.forEach((call) => socket.send(JSON.stringify(call))))
    socket.on('message', (raw: RawData) => {
      const message = JSON.parse(raw.toString()) as {
        id?: number
        error?: { message: string }
        params?: { result?: Partial<RpcLog> & { removed?: boolean } }
      }
      if (message.id !== undefined) {
        if (message.error) return reject(new Error(`eth_subscribe: ${message.error.message}`))
        if (++live === calls.length) resolveLive()
        return
      }
      const result = message.params?.result
      if (!result) return
      if (!result.topics) return on.head()
      if (!result.removed) on.log(result as RpcLog)
    })
  })
}

await main()
