import { describe, expect, it } from 'vitest'
import { ISOLATE_THREADS } from '../../bench/runner/profile-parts.ts'
import {
  COMPILER,
  parsePerfScript,
  partOfSample,
  perfShares,
} from '../../bench/runner/perf-shares.ts'

// bench/runner/perf-shares.ts reads `perf script -F comm,pid,tid,period,ip,sym` (of a recording that
// BENCH_PERF makes) into CPU time by part, on the main thread and on V8's own threads. The samples
// below are shaped as perf 6.1 prints them (shortened stacks of a runner's recording).

const PERF_SCRIPT = `node 18360/18360     500250 
\t         196074d Builtins_BaselineOutOfLinePrologue
\t    7f49be213e90 JS:^write /work/main/node_modules/undici/lib/dispatcher/client-h1.js:864:11
\t    7f49be186656 JS:^processImmediate node:internal/timers:436:28
\t          aa7736 node::SpinEventLoopInternal

node 18360/18360     500000 
\t    ffffffff81a0 do_syscall_64
\t    7f49be2a0001 JS:^writev node:net:950:20
\t    7f49be2a0002 JS:^sendCommand /work/main/node_modules/ioredis/built/Redis.js:337:16
\t    7f49be2a0003 JS:^write file:///work/main/dist/runner/run-record.js:149:11

V8 DefaultWorke 18360/18364     499750 
\t          d1e0f0 v8::internal::compiler::PipelineImpl::OptimizeGraph
\t          d1e0f1 v8::internal::OptimizingCompileDispatcher::CompileTask::Run
\t          d1e0f2 start_thread

node 18360/18365     500100 
\t          c0ffee v8::internal::ConcurrentMarking::RunMajor
\t          c0ffef v8::platform::DefaultJobWorker::Run

node 18360/18360     500000 
\t          b0b0b0 node::http_parser::Parser::OnStreamRead
\t    7f49be2b0000 JS:^parserOnIncoming node:_http_server:1072:26

node 18360/18360     499900 
\t          a0a0a0 uv__io_poll

node 18360/18370     500000 
\t    7f49be2c0000 JS:*decode /work/main/node_modules/cbor-x/decode.js:100:10
\t    7f49be2c0001 JS:^run file:///work/main/dist/pipeline/tasks/cborparse.js:20:5

node 18360/18370     250000 
\t          c0ffee v8::internal::Heap::CollectGarbage
`

describe('bench:perf-shares', () => {
  it('reads each sample: its thread, the CPU time it stands for, its frames from the sampled one out', () => {
    const samples = parsePerfScript(PERF_SCRIPT)
    expect(samples).toHaveLength(8)
    expect(samples.map((sample) => sample.mainThread)).toEqual([
      true,
      true,
      false,
      false,
      true,
      true,
      false,
      false,
    ])
    expect(samples[6]?.tid).toBe('18370')
    expect(samples[0]?.periodNs).toBe(500_250)
    expect(samples[1]?.frames[0]).toBe('do_syscall_64')
    expect(samples[1]?.frames[3]).toBe(
      'JS:^write file:///work/main/dist/runner/run-record.js:149:11',
    )
  })

  it('counts V8 work by what V8 does, and the rest to the first JavaScript frame a part names', () => {
    const parts = parsePerfScript(PERF_SCRIPT)
      .slice(0, 6)
      .map((sample) => partOfSample(sample.frames))
    expect(parts).toEqual([
      // undici with no caller of feedrunner's on the stack (a timer ran it).
      'HTTP client, no caller on the stack (undici)',
      // A system call counts to the code that asked for it: here a run record's write, by ioredis.
      'run records',
      COMPILER,
      'garbage collector',
      // node's HTTP parser is not V8's Parser: the adapter's request parsing, not the compiler.
      'adapter: HTTP server (fastify, node:http)',
      'other (event loop, promise jobs)',
    ])
  })

  it('adds the CPU time of each part, on the main thread and on the others', () => {
    const { cpuNs, mainNs, byPart } = perfShares(parsePerfScript(PERF_SCRIPT))
    expect(cpuNs).toBe(3_750_000)
    expect(mainNs).toBe(2_000_150)
    expect(byPart.get(COMPILER)).toEqual({ mainNs: 0, otherThreadsNs: 499_750 })
    expect(byPart.get('garbage collector')).toEqual({ mainNs: 0, otherThreadsNs: 500_100 })
    // A thread beside the main one that ran JavaScript is an isolate: its collections count to it.
    expect(byPart.get(ISOLATE_THREADS)).toEqual({ mainNs: 0, otherThreadsNs: 750_000 })
  })
})
