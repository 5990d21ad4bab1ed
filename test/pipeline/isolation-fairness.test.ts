import { afterEach, describe, expect, it } from 'vitest'
import { waitFor } from '../../src/dev/process.ts'
import { TaskIsolation } from '../../src/pipeline/index.ts'
import { DEFAULT_PIPELINE_LIMITS } from '../../src/pipeline/limits.ts'
import { abiBombTask, memoryBomb, quickTask, runIsolated as run } from './support/isolated-task.ts'

/**
 * The run isolates are shared fairly between requesters: a requester whose tasks hold every isolate
 * (slow ones, or ones that build until their isolate dies) does not make another requester's task
 * wait for them, and an isolate that dies is replaced at once, not when the next task asks. Before,
 * tasks were served first come, first served, and a dead isolate was replaced by the next task.
 * The decode budgets are lifted (as an operator may): the isolates are what is left to hold.
 */
const limits = { ...DEFAULT_PIPELINE_LIMITS, decodeMaxNodes: 1e9, pathMaxValues: 1e9 }
let isolation: TaskIsolation | undefined
afterEach(async () => {
  await isolation?.close()
  isolation = undefined
})

/** An 18-level ABI alias bomb: a synchronous decode that holds its isolate. */
const slowTask = () => abiBombTask(18)

/** Starts the working isolates and waits until they have loaded (by a task of several owners). */
async function warmed(threads: number, memoryMb: number): Promise<TaskIsolation> {
  const started = new TaskIsolation({ threads, memoryMb, context: { limits } })
  started.warm()
  const owners = Array.from({ length: threads + 1 }, (_, index) => `0xwarm${index}`)
  await Promise.all(owners.map((owner, index) => run(started, quickTask(index), 60_000, owner)))
  await started.ready()
  return started
}

/** Whether a promise has settled yet (read right after awaiting something else). */
function tracked<T>(promise: Promise<T>): { promise: Promise<T>; settled: () => boolean } {
  let settled = false
  const watched = promise.finally(() => (settled = true))
  watched.catch(() => undefined)
  return { promise: watched, settled: () => settled }
}

describe('run isolates shared between requesters', () => {
  it("a requester whose tasks hold every isolate does not hold up another's task", async () => {
    isolation = await warmed(2, 256)
    // The working isolates alone: one more is started only when another requester needs it.
    expect(isolation.size).toBe(2)
    // Four tasks of one requester that each hold their isolate for 20 s (then it is ended), sent
    // to both working isolates before the other requester asks.
    const sent = isolation.crossings
    const flood = Array.from({ length: 4 }, () =>
      tracked(run(isolation!, slowTask(), 19_000, '0xflooder')),
    )
    await waitFor('the flood to hold both isolates', async () => isolation!.crossings === sent + 2)
    const started = performance.now()
    expect(await run(isolation, quickTask(7), 30_000, '0xother')).toBe(7)
    const ms = Math.round(performance.now() - started)
    // The other requester's task ran while the flood held both working isolates, in one more
    // started for it.
    expect(flood.map((task) => task.settled())).toEqual([false, false, false, false])
    expect(isolation.size).toBe(3)
    console.log(`[isolates] the other requester's task took ${ms} ms beside a flood of slow tasks`)
  }, 120_000)

  it('an isolate that dies of memory is replaced at once, and the other requester is served meanwhile', async () => {
    isolation = await warmed(2, 64)
    // Two tasks of one requester, both building past the heap: every working isolate dies.
    const bombs = [1, 2].map(() => tracked(run(isolation!, memoryBomb(), 60_000, '0xattacker')))
    const waits: number[] = []
    let servedDuringBombs = 0
    for (let value = 0; value < 8 || bombs.some((bomb) => !bomb.settled()); value++) {
      const started = performance.now()
      expect(await run(isolation, quickTask(value), 30_000, '0xother')).toBe(value)
      waits.push(Math.round(performance.now() - started))
      if (bombs.some((bomb) => !bomb.settled())) servedDuringBombs++
      await new Promise((resolve) => setTimeout(resolve, 20))
    }
    for (const bomb of bombs)
      await expect(bomb.promise).rejects.toThrow(
        'its isolate died: what it built passed its heap of RUN_ISOLATE_MEMORY_MB=64',
      )
    expect(servedDuringBombs).toBeGreaterThan(0)
    // Replaced without a task asking, one for one: the working isolates are back, loaded.
    await isolation.ready()
    expect(isolation.size).toBeGreaterThanOrEqual(2)
    console.log(
      `[isolates] the other requester's ${waits.length} tasks while two isolates died of memory: ${servedDuringBombs} served before both died, slowest ${Math.max(...waits)} ms, median ${waits.sort((a, b) => a - b)[waits.length >> 1]} ms`,
    )
  }, 180_000)
})
