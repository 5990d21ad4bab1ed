/**
 * The parts of the runner (and of the adapter) a profile's samples are counted to, by the source file of a JavaScript
 * frame: one list for `profile-shares.ts` (V8's `.cpuprofile`) and `perf-shares.ts` (`perf`), so the
 * two tables name the same parts. The first part matched from the sampled frame outwards wins: a
 * socket write that ioredis started counts to the Redis client, one that undici started to HTTP.
 */
export const PARTS: ReadonlyArray<readonly [string, RegExp]> = [
  [
    'Redis client (ioredis, scripts, run records, key leases, transaction store)',
    /node_modules\/(ioredis|redis-parser|bullmq)\/|dist\/queue\/|dist\/runner\/run-record|sender\/(tx-store|ownership\/)/,
  ],
  [
    'HTTP client (the bridge task to the adapter, the sender JSON-RPC batches)',
    /node_modules\/undici\/|node:internal\/deps\/undici|dist\/net\/|pipeline\/tasks\/(bridge|http-client)|json-rpc-batch|bounded-get-url/,
  ],
  [
    'node reads over WebSocket (listener, confirmer)',
    /node_modules\/ws\/|dist\/chain\/endpoints\/|node-json-rpc-provider|ethers\/lib\.esm\/providers\//,
  ],
  ['logging (pino)', /node_modules\/(pino|sonic-boom|@pinojs)|dist\/config\/logger/],
  ['metrics (prom-client)', /node_modules\/prom-client\/|dist\/metrics\//],
  ['signing', /sender\/(tx-signer|signing|ordered-signing)|@noble\/|secp256k1/],
  ['pipeline (executor and tasks)', /dist\/pipeline\//],
  ['sender (other)', /dist\/chain\/sender\//],
  ['listener', /dist\/chain\/(listener\/|oracle-request-data|operator)/],
  ['runner (other)', /dist\/runner\//],
  ['ethers (other)', /node_modules\/ethers\//],
  // The adapter's process: what it runs for a request, outermost last.
  ['adapter: EA framework', /node_modules\/@chainlink\/external-adapter-framework\//],
  ['adapter: feedrunner endpoints and checks', /dist\/adapter\//],
  [
    'adapter: HTTP server (fastify, node:http)',
    /node_modules\/(fastify|find-my-way|avvio|@fastify)\/|node:_http_(server|incoming|outgoing|common)/,
  ],
]

export const GARBAGE_COLLECTOR = 'garbage collector'
export const OTHER = 'other (event loop, promise jobs)'

/** The part of the first frame (sampled frame first) whose source a part names, or undefined. */
export function partOfSources(sources: Iterable<string>): string | undefined {
  for (const source of sources) {
    const part = PARTS.find(([, pattern]) => pattern.test(source))
    if (part) return part[0]
  }
  return undefined
}
