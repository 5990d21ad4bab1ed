import { describe, expect, it } from 'vitest'
import { wakeableSleep } from '../../src/chain/wakeable-sleep.ts'

const timed = async (run: () => Promise<void>) => {
  const started = performance.now()
  await run()
  return performance.now() - started
}

// A woken sleep of ten minutes that ends within 30 s was woken; the test's own timeout catches a hang.
describe('wakeableSleep', () => {
  it('sleeps the whole time unless woken; a wake ends the sleep at once', async () => {
    const pause = wakeableSleep()
    expect(await timed(() => pause.sleep(150))).toBeGreaterThanOrEqual(140)
    setTimeout(() => pause.wake(), 20)
    expect(await timed(() => pause.sleep(600_000))).toBeLessThan(30_000)
  })

  it('a wake while nobody sleeps makes only the next sleep return at once', async () => {
    const pause = wakeableSleep()
    pause.wake()
    expect(await timed(() => pause.sleep(600_000))).toBeLessThan(30_000)
    expect(await timed(() => pause.sleep(150))).toBeGreaterThanOrEqual(140)
  })
})
