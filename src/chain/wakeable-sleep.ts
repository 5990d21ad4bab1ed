/**
 * The pause of a poll loop that news can cut short: `wake()` ends the current `sleep()`, and a wake that
 * comes while the loop is busy makes its next `sleep()` return at once, so no news is slept through.
 */
export interface WakeableSleep {
  sleep(ms: number): Promise<void>
  wake(): void
}

export function wakeableSleep(): WakeableSleep {
  let pending = false
  let wakeSleeper: (() => void) | undefined
  return {
    async sleep(ms) {
      if (!pending) {
        await new Promise<void>((resolveSleep) => {
          const timer = setTimeout(resolveSleep, ms)
          wakeSleeper = () => {
            clearTimeout(timer)
            resolveSleep()
          }
        })
        wakeSleeper = undefined
      }
      pending = false
    },
    wake() {
      pending = true
      wakeSleeper?.()
    },
  }
}
