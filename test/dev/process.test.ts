import { existsSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { startOwnedProcess, waitFor } from '../../src/dev/process.ts'

/** A wrapper that forks a long-lived child and prints its PID, as `faketime` forks node. */
function startWrapper(ownProcessGroup: boolean) {
  return startOwnedProcess('wrapper', 'sh', ['-c', 'sleep 600 & echo "child $!"; wait'], {
    ownProcessGroup,
    stopGraceMs: 2_000,
  })
}

async function childPidOf(wrapper: ReturnType<typeof startWrapper>): Promise<number> {
  await waitFor('the child pid line', async () => /child \d+/.test(wrapper.output()), 30_000)
  return Number(/child (\d+)/.exec(wrapper.output())![1])
}

describe('owned processes', () => {
  it('stop a process in a group of its own with what it started', async () => {
    const wrapper = startWrapper(true)
    const child = await childPidOf(wrapper)
    expect(existsSync(`/proc/${child}`)).toBe(true)
    await wrapper.stop()
    // Not a race: the group was signalled before the wrapper's exit was awaited; a hang bound only.
    await waitFor('the forked child to be gone', async () => !existsSync(`/proc/${child}`), 30_000)
  })

  it('signal only the process itself when it shares the caller’s group', async () => {
    const wrapper = startWrapper(false)
    const child = await childPidOf(wrapper)
    await wrapper.stop()
    expect(existsSync(`/proc/${child}`)).toBe(true)
    process.kill(child, 'SIGKILL')
  })
})
