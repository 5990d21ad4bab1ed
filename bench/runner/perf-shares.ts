/**
 * Where a process's CPU went, by part (`npm run bench:perf-shares -- <perf.data>`): the recording that
 * `BENCH_PERF=runner npm run bench` makes with Linux `perf` (`perf-record.ts`).
 *
 * Unlike a `.cpuprofile` (`profile-shares.ts`), `perf record -e cpu-clock` samples a thread only while
 * it runs on a CPU, and samples every thread of the process: the shares are shares of the process's
 * CPU time, V8's own threads included (its optimising compiler and most of its garbage collector run
 * beside the main thread). A sample counts to the garbage collector or the compiler when V8 code of
 * theirs is on its stack, else to the part of the first JavaScript frame from the sampled one
 * outwards (`profile-parts.ts`: the same parts as the `.cpuprofile` table), else to "other".
 */
import { execFileSync } from 'node:child_process'
import { pathToFileURL } from 'node:url'
import { GARBAGE_COLLECTOR, ISOLATE_THREADS, OTHER, partOfSources } from './profile-parts.ts'

export const COMPILER = 'JIT compiler (V8 compiling hot code, mostly on its own threads)'

/** V8's garbage collector, by the C++ names of its collectors, marking, sweeping and barriers. */
const GC_FRAME =
  /v8::internal::(Heap::|Scavenge|MarkCompact|ConcurrentMarking|Sweeper|MinorMark|IncrementalMarking|Evacuat|MarkingVisitor|MarkingBarrier|WriteBarrier|MemoryReducer|PagedSpace|SemiSpace)/
/**
 * V8's compilers: TurboFan, Maglev, Sparkplug, the parser and bytecode generator, regular expressions
 * (V8's own Parser, not node's `http_parser::Parser`).
 */
const COMPILER_FRAME =
  /v8::internal::(compiler::|maglev::|turboshaft::|baseline::|OptimizingCompileDispatcher|Compiler::|Parser::|PreParser|interpreter::BytecodeGenerator|RegExpCompiler|RegExpParser)|Builtins_CompileLazy/

export interface PerfSample {
  /** On the process's main thread (thread id = process id). */
  mainThread: boolean
  /** The thread's id. */
  tid: string
  /** CPU time the sample stands for. */
  periodNs: number
  /** Symbols, the sampled frame first; JavaScript frames read `JS:<name> <source>:<line>:<column>`. */
  frames: string[]
}

/** `perf script -F comm,pid,tid,period,ip,sym` output, one sample per block. */
export function parsePerfScript(text: string): PerfSample[] {
  const samples: PerfSample[] = []
  for (const block of text.split(/\n\s*\n/)) {
    const lines = block.split('\n').filter((line) => line.trim() !== '')
    // The thread's name may hold spaces ("V8 DefaultWorke"): read the header from its end.
    const header = /(\d+)\/(\d+)\s+(\d+)\s*$/.exec(lines[0] ?? '')
    if (!header) continue
    samples.push({
      mainThread: header[1] === header[2],
      tid: header[2] as string,
      periodNs: Number(header[3]),
      frames: lines.slice(1).map((line) => line.trim().replace(/^[0-9a-f]+\s+/, '')),
    })
  }
  return samples
}

/** The part one sample counts to. */
export function partOfSample(frames: readonly string[]): string {
  const native = frames.filter((frame) => !frame.startsWith('JS:'))
  if (native.some((frame) => GC_FRAME.test(frame))) return GARBAGE_COLLECTOR
  if (native.some((frame) => COMPILER_FRAME.test(frame))) return COMPILER
  return partOfSources(frames.filter((frame) => frame.startsWith('JS:'))) ?? OTHER
}

export interface PartTime {
  mainNs: number
  otherThreadsNs: number
}

/**
 * CPU time by part, on the main thread and on the others. A thread other than the main one that ran
 * JavaScript is an isolate (a worker thread of the pure tasks; V8's own threads run none): all its
 * time, its garbage collection and compiling included, counts to the isolates.
 */
export function perfShares(samples: readonly PerfSample[]): {
  cpuNs: number
  mainNs: number
  byPart: Map<string, PartTime>
} {
  const isolates = new Set(
    samples
      .filter(
        (sample) => !sample.mainThread && sample.frames.some((frame) => frame.startsWith('JS:')),
      )
      .map((sample) => sample.tid),
  )
  const byPart = new Map<string, PartTime>()
  let cpuNs = 0
  let mainNs = 0
  for (const sample of samples) {
    const part = isolates.has(sample.tid) ? ISOLATE_THREADS : partOfSample(sample.frames)
    const time = byPart.get(part) ?? { mainNs: 0, otherThreadsNs: 0 }
    if (sample.mainThread) time.mainNs += sample.periodNs
    else time.otherThreadsNs += sample.periodNs
    byPart.set(part, time)
    cpuNs += sample.periodNs
    if (sample.mainThread) mainNs += sample.periodNs
  }
  return { cpuNs, mainNs, byPart }
}

function perfScript(file: string): string {
  try {
    return execFileSync('perf', ['script', '-i', file, '-F', 'comm,pid,tid,period,ip,sym'], {
      encoding: 'utf8',
      maxBuffer: 2 ** 30,
      stdio: ['ignore', 'pipe', 'ignore'],
    })
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT')
      throw new Error('bench:perf-shares needs perf (Debian: apt-get install linux-perf)', {
        cause: error,
      })
    throw error
  }
}

function main(): void {
  const args = process.argv.slice(2)
  const perAt = args.indexOf('--requests')
  const requests = perAt >= 0 ? Number(args[perAt + 1]) : undefined
  const file = args.find(
    (arg, index) => !arg.startsWith('--') && (perAt < 0 || index !== perAt + 1),
  )
  if (!file || (requests !== undefined && !(requests > 0))) {
    console.error('usage: npm run bench:perf-shares -- <perf.data> [--requests <N>]')
    process.exit(2)
  }
  const { cpuNs, mainNs, byPart } = perfShares(parsePerfScript(perfScript(file)))
  const ms = (ns: number) => (ns / 1e6).toFixed(0)
  const percent = (ns: number) => `${((ns / cpuNs) * 100).toFixed(1)} %`.padStart(7)
  // With --requests, the recording's CPU a request: a warm phase's recording is its measured N alone.
  const perRequest = (ns: number) =>
    requests === undefined ? '' : `${(ns / 1e6 / requests).toFixed(3).padStart(7)} `
  console.log(
    `${file}: ${ms(cpuNs)} ms of CPU sampled, ${ms(mainNs)} ms of it on the main thread, ${ms(cpuNs - mainNs)} ms on the others${requests === undefined ? '' : `; ${(cpuNs / 1e6 / requests).toFixed(2)} ms a request over ${requests}`}`,
  )
  console.log(
    `${'all'.padStart(7)} ${'main'.padStart(7)} ${'others'.padStart(7)} ${requests === undefined ? '' : `${'ms/req'.padStart(7)} `} part`,
  )
  for (const [part, time] of [...byPart].sort(
    (a, b) => b[1].mainNs + b[1].otherThreadsNs - (a[1].mainNs + a[1].otherThreadsNs),
  ))
    console.log(
      `${percent(time.mainNs + time.otherThreadsNs)} ${percent(time.mainNs)} ${percent(time.otherThreadsNs)} ${perRequest(time.mainNs + time.otherThreadsNs)} ${part}`,
    )
}

// Run as a command; imported (by its test), it only exports the parser and the shares.
if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) main()
