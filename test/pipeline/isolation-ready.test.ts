import { afterEach, describe, expect, it } from 'vitest'
import type { Worker } from 'node:worker_threads'
import { FeedrunnerError } from '../../src/config/errors.ts'
import { TaskIsolation } from '../../src/pipeline/index.ts'
import { runIsolated } from './support/isolated-task.ts'

/**
 * A batch goes only to an isolate that has loaded the task types. Before, it was posted to one still
 * starting: it waited there for the start (a second or more on a busy machine, while a runner's
 * first requests queued behind it), and the start counted against the task's time.
 */
let isolation: TaskIsolation | undefined
afterEach(async () => {
  await isolation?.close()
  isolation = undefined
})

function lowercase(target: TaskIsolation, text: string): Promise<unknown> {
  const task = { taskId: 'lower', type: 'lowercase', attributes: { input: text }, vars: {} }
  return runIsolated(target, task, 60_000)
}

/** The worker threads behind the isolates (private: read here to end one before it has loaded). */
function workersOf(target: TaskIsolation): Worker[] {
  return (target as unknown as { slots: { worker: Worker }[] }).slots.map((slot) => slot.worker)
}

describe('isolates that are still starting', () => {
  it('are sent no batch until they have loaded; ready() says when they have', async () => {
    isolation = new TaskIsolation({ threads: 1, memoryMb: 128, context: {} })
    isolation.warm()
    const value = lowercase(isolation, 'ABC')
    // Nothing crossed yet: both isolates are loading the task types.
    expect(isolation.crossings).toBe(0)
    await isolation.ready()
    await expect(value).resolves.toBe('abc')
    expect(isolation.crossings).toBe(1)
    // Once loaded, ready() answers at once.
    await isolation.ready()
  }, 120_000)

  it('a batch asked for with no isolate started starts one and waits for it to load', async () => {
    isolation = new TaskIsolation({ threads: 1, memoryMb: 128, context: {} })
    const value = lowercase(isolation, 'XY')
    expect(isolation.size).toBe(1)
    expect(isolation.crossings).toBe(0)
    await expect(value).resolves.toBe('xy')
  }, 120_000)

  it('one that dies before it has loaded is not started again in a loop; whoever waits is told', async () => {
    isolation = new TaskIsolation({ threads: 1, memoryMb: 128, context: {} })
    const value = lowercase(isolation, 'ABC')
    const ready = isolation.ready()
    for (const worker of workersOf(isolation)) await worker.terminate()
    const error = await ready.catch((caught: unknown) => caught)
    expect(error).toBeInstanceOf(FeedrunnerError)
    expect((error as FeedrunnerError).kind).toBe('unavailable')
    expect((error as Error).message).toMatch(/^an isolate for pure tasks could not start \(/)
    // The batch waiting for it is told too (a run retries it: the kind is retryable), not held.
    await expect(value).rejects.toThrow('an isolate for pure tasks could not start')
    expect(isolation.size).toBe(0)
    // A later batch starts one again, and it loads.
    await expect(lowercase(isolation, 'DE')).resolves.toBe('de')
  }, 120_000)

  it('a closing isolation tells whoever waits for it to load', async () => {
    isolation = new TaskIsolation({ threads: 1, memoryMb: 128, context: {} })
    isolation.warm()
    const ready = isolation.ready().catch((caught: unknown) => caught)
    await isolation.close()
    expect(await ready).toBeInstanceOf(Error)
    expect(((await ready) as Error).message).toBe('stopped: the runner is closing')
  }, 120_000)
})
