/**
 * Where a profiled runner's busy time went, by part (`npm run bench:profile-shares -- <file.cpuprofile>`):
 * the `.cpuprofile` that `BENCH_PROFILE=runner npm run bench` writes, read from `--from` ms after the
 * profile starts (the process's start-up left out), idle time left out.
 *
 * Each sample goes to the first part named on its stack, read from the sampled function outwards: a
 * socket write that ioredis started counts to the Redis client, one that undici started to HTTP. Work
 * no project or library frame claims (the event loop, promise jobs) is "other"; the garbage
 * collector is a part of its own.
 *
 * The samples are wall-clock time on the main thread: on a shared machine they include time the thread
 * was ready while another process ran, most of all right after a socket write woke the process it
 * wrote to. A part's share of the samples is therefore not its share of the CPU; socket writes are
 * counted high (docs/performance.md, "Why the two ratios are not met").
 */
import { readFileSync } from 'node:fs'
import { pathToFileURL } from 'node:url'
import { z } from 'zod'

const PARTS: ReadonlyArray<readonly [string, RegExp]> = [
  [
    'Redis client (ioredis, scripts, run records, leases, transaction store)',
    /node_modules\/(ioredis|redis-parser|bullmq)\/|dist\/queue\/|dist\/runner\/(run-record|direct\/)|sender\/tx-store/,
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
]

const profileSchema = z.object({
  nodes: z.array(
    z.object({
      id: z.number(),
      callFrame: z.object({ functionName: z.string(), url: z.string() }),
      children: z.array(z.number()).optional(),
    }),
  ),
  samples: z.array(z.number()),
  timeDeltas: z.array(z.number()),
})
export type Profile = z.infer<typeof profileSchema>
type ProfileNode = Profile['nodes'][number]

/** The part a sample counts to: the first one named from the sampled frame outwards. */
function partOf(
  node: ProfileNode,
  nodes: Map<number, ProfileNode>,
  parents: Map<number, number>,
): string {
  if (node.callFrame.functionName === '(garbage collector)') return 'garbage collector'
  for (let at: number | undefined = node.id; at !== undefined; at = parents.get(at)) {
    const url = nodes.get(at)?.callFrame.url ?? ''
    const part = PARTS.find(([, pattern]) => pattern.test(url))
    if (part) return part[0]
  }
  return 'other (event loop, promise jobs)'
}

/** Busy microseconds by part, from `fromMs` after the profile's first sample. */
export function cpuShares(
  profile: Profile,
  fromMs: number,
): { busyUs: number; byPart: Map<string, number> } {
  const nodes = new Map(profile.nodes.map((node) => [node.id, node]))
  const parents = new Map<number, number>()
  for (const node of profile.nodes)
    for (const child of node.children ?? []) parents.set(child, node.id)
  const byPart = new Map<string, number>()
  let elapsedUs = 0
  let busyUs = 0
  profile.samples.forEach((id, index) => {
    const deltaUs = profile.timeDeltas[index] ?? 0
    elapsedUs += deltaUs
    const node = nodes.get(id)
    if (elapsedUs < fromMs * 1_000 || !node || node.callFrame.functionName === '(idle)') return
    busyUs += deltaUs
    const part = partOf(node, nodes, parents)
    byPart.set(part, (byPart.get(part) ?? 0) + deltaUs)
  })
  return { busyUs, byPart }
}

function main(): void {
  const args = process.argv.slice(2)
  const fromAt = args.indexOf('--from')
  const fromMs = fromAt >= 0 ? Number(args[fromAt + 1]) : 1_500
  const file = args.find(
    (arg, index) => !arg.startsWith('--') && (fromAt < 0 || index !== fromAt + 1),
  )
  if (!file || !Number.isFinite(fromMs)) {
    console.error('usage: npm run bench:profile-shares -- <file.cpuprofile> [--from <ms>]')
    process.exit(2)
  }
  const profile = profileSchema.parse(JSON.parse(readFileSync(file, 'utf8')))
  const { busyUs, byPart } = cpuShares(profile, fromMs)
  console.log(`${file}: ${(busyUs / 1_000).toFixed(0)} ms busy from ${fromMs} ms on`)
  for (const [part, us] of [...byPart].sort((a, b) => b[1] - a[1]))
    console.log(`${((us / busyUs) * 100).toFixed(1).padStart(5)} %  ${part}`)
}

// Run as a command; imported (by its test), it only exports cpuShares.
if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) main()
