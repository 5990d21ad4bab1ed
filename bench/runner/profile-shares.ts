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
 * counted high, and the work of V8's own threads (the optimising compiler, most of the garbage
 * collector's) is not seen at all. `perf-shares.ts` counts CPU time on every thread, where `perf` is
 * at hand (docs/performance.md, "Why the two ratios are not met").
 */
import { readFileSync } from 'node:fs'
import { pathToFileURL } from 'node:url'
import { z } from 'zod'
import { GARBAGE_COLLECTOR, OTHER, partOfSources } from './profile-parts.ts'

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
  if (node.callFrame.functionName === '(garbage collector)') return GARBAGE_COLLECTOR
  return partOfSources(sourcesOutwards(node.id, nodes, parents)) ?? OTHER
}

function* sourcesOutwards(
  id: number,
  nodes: Map<number, ProfileNode>,
  parents: Map<number, number>,
): Generator<string> {
  for (let at: number | undefined = id; at !== undefined; at = parents.get(at)) {
    // Read as perf names a JavaScript frame, so one list of parts serves both (profile-parts.ts).
    const frame = nodes.get(at)?.callFrame
    yield `JS:${frame?.functionName ?? ''} ${frame?.url ?? ''}`
  }
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
