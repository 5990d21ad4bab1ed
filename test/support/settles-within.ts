/** What `promise` resolves to, or 'timed out' when it has not settled within `ms` (for hangs, not speed). */
export async function settlesWithin<T>(promise: Promise<T>, ms: number): Promise<T | 'timed out'> {
  let timer: NodeJS.Timeout | undefined
  const timeout = new Promise<'timed out'>(
    (resolve) => (timer = setTimeout(() => resolve('timed out'), ms)),
  )
  try {
    return await Promise.race([promise, timeout])
  } finally {
    clearTimeout(timer)
  }
}
