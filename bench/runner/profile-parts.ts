/**
 * The parts of the runner (and of the adapter) a profile's samples are counted to: one list for
 * `profile-shares.ts` (V8's `.cpuprofile`) and `perf-shares.ts` (`perf`), so the two tables name the
 * same parts. A JavaScript frame is read as `JS:<function> <source>` in both.
 *
 * The runner's parts are what a request pays for, so a sample counts to the code that asked for the
 * work, not to the library that did it: the first part in this list that names any frame of the
 * sample's stack wins (the list runs from the most particular purpose to the most general, so a
 * JSON-RPC batch sent for the simulation counts to the simulation, not to the sender that sent it),
 * and library frames (the Redis and HTTP clients, ethers, ws, the project's Redis helpers) count
 * only when no part is named: a Redis reply parsed off the socket has no caller on its stack. The parts hold for this checkout
 * and for the commits `--against` compares it with (their `dist/` has the same layout).
 */
export const PARTS: ReadonlyArray<readonly [string, RegExp]> = [
  ['logging (pino)', /node_modules\/(pino|sonic-boom|@pinojs)|dist\/config\/logger/],
  ['metrics (prom-client)', /node_modules\/prom-client\/|dist\/metrics\//],
  [
    'isolates: starting them, passing messages (main thread)',
    /dist\/pipeline\/isolation\/|node:internal\/worker|node::worker::|v8::ValueSerializer|v8::ValueDeserializer/,
  ],
  [
    'pure tasks on the main thread (decode, parse, encode)',
    /dist\/pipeline\/tasks\/(ethabidecodelog|ethabidecode|cborparse|jsonparse|ethabiencode2?|abi-words|hexdecode|hexencode|base64|divide|multiply|convert)|node_modules\/(cbor-x|jsonpath-plus)\//,
  ],
  ['simulation (eth_call before signing)', /JS:\S*simulate\w* /],
  ['signing', /sender\/(tx-signer|signing|ordered-signing)|@noble\/|secp256k1/],
  ['finality watch', /JS:\S*(letGoOfFinal|watchMined|Final\w*|finality\w*) .*sender\//i],
  ['confirmation', /sender\/(confirmer|receipts-first|receipt-result|poll-loop)/],
  [
    'transaction store and key lease',
    /sender\/(tx-store|store\/|ownership\/)|dist\/runner\/sender-authorisation/,
  ],
  ['sender (other: broadcast, JSON-RPC batches, fees)', /dist\/chain\/sender\//],
  [
    'the adapter call (bridge task, HTTP client)',
    /pipeline\/tasks\/(bridge|http-client)|dist\/net\/|bounded-get-url/,
  ],
  [
    'listener',
    /dist\/chain\/(listener\/|oracle-request-data|operator|request-log|logs-bloom|recent-headers|block-roots|block-interval)|dist\/runner\/listening/,
  ],
  ['run records', /dist\/runner\/(run-record|run-fields|run-outcomes|status)/],
  [
    'intake and BullMQ (the requests job, admission)',
    /node_modules\/bullmq\/|dist\/runner\/(request-intake|requests-queue|requests-worker|request-payload|admission|quarantine|feed-job|work-part)/,
  ],
  ['pipeline executor (tasks other than the above)', /dist\/pipeline\//],
  ['runner (other)', /dist\/runner\//],
  // The adapter's process: what it runs for a request, outermost last.
  ['adapter: EA framework', /node_modules\/@chainlink\/external-adapter-framework\//],
  ['adapter: feedrunner endpoints and checks', /dist\/adapter\//],
  [
    'adapter: HTTP server (fastify, node:http)',
    /node_modules\/(fastify|find-my-way|avvio|@fastify)\/|node:_http_(server|incoming|outgoing|common)/,
  ],
]

/** Libraries and helpers that work for whoever called them: counted only when no caller is named. */
export const LIBRARY_PARTS: ReadonlyArray<readonly [string, RegExp]> = [
  [
    'Redis client, no caller on the stack (replies off the socket)',
    /node_modules\/(ioredis|redis-parser)\/|dist\/queue\//,
  ],
  [
    'HTTP client, no caller on the stack (undici)',
    /node_modules\/undici\/|node:internal\/deps\/undici/,
  ],
  [
    'node reads, no caller on the stack (ethers, ws)',
    /node_modules\/(ws|ethers)\/|dist\/chain\/(endpoints\/|node-json-rpc-provider|provider|head-header)/,
  ],
]

export const GARBAGE_COLLECTOR = 'garbage collector'
export const OTHER = 'other (event loop, promise jobs)'
/** perf: every sample of a thread that ran JavaScript beside the main thread (`perf-shares.ts`). */
export const ISOLATE_THREADS = 'isolates: their threads (the pure tasks, their heaps, their start)'

/**
 * The part a sample counts to, given its frames: the first part that names one of them, else the
 * first library that does, else undefined.
 */
export function partOfSources(sources: Iterable<string>): string | undefined {
  const frames = [...sources]
  for (const parts of [PARTS, LIBRARY_PARTS]) {
    const part = parts.find(([, pattern]) => frames.some((frame) => pattern.test(frame)))
    if (part) return part[0]
  }
  return undefined
}
