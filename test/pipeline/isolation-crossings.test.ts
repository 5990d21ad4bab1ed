import { afterEach, describe, expect, it } from 'vitest'
import { RunCrashedError, TaskIsolation } from '../../src/pipeline/index.ts'
import { DEFAULT_PIPELINE_LIMITS } from '../../src/pipeline/limits.ts'
import { abiBombTask, memoryBomb, quickTask, runIsolated as run } from './support/isolated-task.ts'

/**
 * Batches of one requester asked for together cross into the isolates together: one message and
 * one answer for several runs' tasks, not one each. Each task keeps its own time, read from the
 * progress the isolate shares with this thread, and a batch that kills its isolate fails alone: the
 * others sent with it run again. The decode budgets are lifted (as an operator may): the isolates
 * are what is left to hold.
 */
const limits = { ...DEFAULT_PIPELINE_LIMITS, decodeMaxNodes: 1e9, pathMaxValues: 1e9 }
let isolation: TaskIsolation | undefined
afterEach(async () => {
  await isolation?.close()
  isolation = undefined
})

/** A synchronous decode of seconds (about 24 on a 2-core machine): it runs until it is ended. */
const slowTask = () => abiBombTask(16, 65_536)

/** One working isolate and its warm spare, both loaded. */
async function started(memoryMb: number): Promise<TaskIsolation> {
  const isolation = new TaskIsolation({ threads: 1, memoryMb, context: { limits } })
  isolation.warm()
  await isolation.ready()
  return isolation
}

describe('batches that wait together cross together', () => {
  it("sends one requester's batches asked for in one turn together, at most eight a message", async () => {
    isolation = await started(128)
    const before = isolation.crossings
    const values = await Promise.all(
      Array.from({ length: 12 }, (_, value) => run(isolation!, quickTask(value), 30_000, '0xone')),
    )
    expect(values).toEqual(Array.from({ length: 12 }, (_, value) => value))
    // One isolate works for a requester (the other is kept for another): eight, then four.
    expect(isolation.crossings - before).toBe(2)
  }, 60_000)

  it('a batch that kills its isolate fails alone: those sent with it, before and after, run again', async () => {
    isolation = await started(64)
    const before = isolation.crossings
    const asked = [quickTask(1), memoryBomb(), quickTask(2), quickTask(3), quickTask(4)]
    const answers = asked.map((task) =>
      run(isolation!, task, 60_000, '0xone').then(
        (value) => ({ value }),
        (error: unknown) => ({ error }),
      ),
    )
    const [first, bomb, ...after] = await Promise.all(answers)
    expect(first).toEqual({ value: 1 })
    expect((bomb as { error: unknown }).error).toBeInstanceOf(RunCrashedError)
    expect(String((bomb as { error: unknown }).error)).toMatch(
      /its isolate died: what it built passed its heap of RUN_ISOLATE_MEMORY_MB=64/,
    )
    expect(after).toEqual([{ value: 2 }, { value: 3 }, { value: 4 }])
    // All five crossed with the bomb, and the four others crossed again together: what makes their
    // answers above the isolate's second try, not a first one apart from it.
    expect(isolation.crossings - before).toBe(2)
  }, 120_000)

  it('ends the isolate at the time of the task it is running, not the first of its message', async () => {
    isolation = await started(256)
    const tasks = [
      { task: quickTask(1), timeoutMs: 30_000 },
      { task: slowTask(), timeoutMs: 300 },
      { task: quickTask(2), timeoutMs: 30_000 },
      { task: quickTask(3), timeoutMs: 30_000 },
    ]
    const startedAt = performance.now()
    const answers = await Promise.all(
      tasks.map(({ task, timeoutMs }) =>
        run(isolation!, task, timeoutMs, '0xone').then(
          (value) => ({ value }),
          (error: unknown) => ({ error }),
        ),
      ),
    )
    const ms = performance.now() - startedAt
    const [first, slow, ...after] = answers
    expect(first).toEqual({ value: 1 })
    expect(after).toEqual([{ value: 2 }, { value: 3 }])
    const error = (slow as { error: unknown }).error
    expect(error).toBeInstanceOf(RunCrashedError)
    expect(String(error)).toMatch(/it ran 1300 ms and did not stop; its isolate was ended/)
    // Bound by the slow task's own 300 ms and the grace, not the first task's 30 s.
    expect(ms).toBeLessThan(25_000)
  }, 60_000)
})
