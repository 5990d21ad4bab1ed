// Measures of the adapter bench (bench/adapter.ts) read from Redis and from sorted samples.

/** Median time the cold jobs waited in the queue and spent in the worker, from the jobs' own timestamps. */
export async function coldStages(
  redisUrl: string,
  prefix: string,
): Promise<{ jobs: number; queued: number; inWorker: number }> {
  const { Redis } = await import('ioredis')
  const redis = new Redis(redisUrl)
  try {
    const keys: string[] = []
    let cursor = '0'
    do {
      const [next, batch] = await redis.scan(
        cursor,
        'MATCH',
        `${prefix}:fetch-weather:weather-*`,
        'COUNT',
        1000,
      )
      cursor = next
      keys.push(...batch.filter((key) => !key.endsWith(':lock') && !key.endsWith(':logs')))
    } while (cursor !== '0')
    const queued: number[] = []
    const inWorker: number[] = []
    for (const key of keys) {
      const [timestamp, processedOn, finishedOn] = (
        await redis.hmget(key, 'timestamp', 'processedOn', 'finishedOn')
      ).map(Number)
      if (!timestamp || !processedOn || !finishedOn) continue
      queued.push(processedOn - timestamp)
      inWorker.push(finishedOn - processedOn)
    }
    queued.sort((a, b) => a - b)
    inWorker.sort((a, b) => a - b)
    // Our keys only: this run's prefix.
    const all: string[] = []
    cursor = '0'
    do {
      const [next, batch] = await redis.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1000)
      cursor = next
      all.push(...batch)
    } while (cursor !== '0')
    if (all.length > 0) await redis.del(...all)
    return {
      jobs: queued.length,
      queued: Math.round(percentile(queued, 50)),
      inWorker: Math.round(percentile(inWorker, 50)),
    }
  } finally {
    redis.disconnect()
  }
}

export function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!
}

/** Median ms a group's fetch jobs waited for a worker and spent in it, from the jobs' own timestamps. */
export interface GroupStages {
  jobs: number
  queued: number
  inWorker: number
}

/**
 * The weather jobs under `prefix` grouped by `groupOf` (their parameters to a group name, or
 * undefined to leave one out), each group's median wait for a worker and time in it.
 */
export async function stagesByGroup(
  redisUrl: string,
  prefix: string,
  groupOf: (params: Record<string, string>) => string | undefined,
): Promise<Record<string, GroupStages>> {
  const { Redis } = await import('ioredis')
  const redis = new Redis(redisUrl)
  try {
    const groups = new Map<string, { queued: number[]; inWorker: number[] }>()
    let cursor = '0'
    do {
      const [next, batch] = await redis.scan(
        cursor,
        'MATCH',
        `${prefix}:fetch-weather:weather-*`,
        'COUNT',
        1000,
      )
      cursor = next
      for (const key of batch) {
        if (key.endsWith(':lock') || key.endsWith(':logs')) continue
        const [data, timestamp, processedOn, finishedOn] = await redis.hmget(
          key,
          'data',
          'timestamp',
          'processedOn',
          'finishedOn',
        )
        if (!data || !timestamp || !processedOn || !finishedOn) continue
        const params = (JSON.parse(data) as { params?: Record<string, string> }).params ?? {}
        const group = groupOf(params)
        if (group === undefined) continue
        const times = groups.get(group) ?? { queued: [], inWorker: [] }
        times.queued.push(Number(processedOn) - Number(timestamp))
        times.inWorker.push(Number(finishedOn) - Number(processedOn))
        groups.set(group, times)
      }
    } while (cursor !== '0')
    const result: Record<string, GroupStages> = {}
    for (const [group, times] of groups) {
      times.queued.sort((a, b) => a - b)
      times.inWorker.sort((a, b) => a - b)
      result[group] = {
        jobs: times.queued.length,
        // Whole ms: a job's timestamp is Redis's clock to the microsecond.
        queued: Math.round(percentile(times.queued, 50)),
        inWorker: Math.round(percentile(times.inWorker, 50)),
      }
    }
    return result
  } finally {
    redis.disconnect()
  }
}
