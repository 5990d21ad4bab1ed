import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { exposureWarning } from '../../src/cli/exposure.ts'
import { freePort } from '../../src/dev/ports.ts'
import { startOwnedProcess, waitFor, type OwnedProcess } from '../../src/dev/process.ts'
import { listeningAddresses, LOOPBACK_V4 } from '../support/listening.ts'
import { testRedisUrl, uniquePrefix } from '../support/redis.ts'

// The adapter, its metrics and a worker's or runner's OPERATIONS_PORT listen on loopback unless
// EA_HOST says otherwise, the line says where they really listen, and a bind beyond loopback says
// once, at warn, what anyone who reaches the host gets. Addresses are read from the kernel's table.

const bin = join(import.meta.dirname, '../../bin/feedrunner.js')
const FEED_KEY = 'listen-address-feed-key-never-shown'
const started: OwnedProcess[] = []

afterAll(async () => {
  for (const child of started) await child.stop()
})

async function startUntil(args: string[], env: Record<string, string>, ready: RegExp) {
  const child = startOwnedProcess(
    `feedrunner ${args.join(' ')}`,
    process.execPath,
    [bin, ...args],
    {
      env: {
        ...process.env,
        REDIS_URL: testRedisUrl(),
        QUEUE_PREFIX: uniquePrefix('listen'),
        LOG_LEVEL: 'warn',
        LOG_FORMAT: 'json',
        EA_HOST: '',
        ...env,
      },
      keepOutputChars: Infinity,
    },
  )
  started.push(child)
  await waitFor(
    `${child.name} to be ready; its output so far:\n${child.output()}`,
    async () => ready.test(child.output()),
    60_000,
    100,
  )
  return child
}

function warnings(output: string): Array<{ level: number; msg: string; exposed?: string[] }> {
  return output
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as { level: number; msg: string; exposed?: string[] })
    .filter((line) => line.msg.includes('is not loopback'))
}

describe('where a serving process listens', () => {
  it('the adapter and its metrics: loopback by default, said as such, nothing exposed', async () => {
    const [eaPort, metricsPort] = [await freePort(), await freePort()]
    const child = await startUntil(
      ['adapter'],
      { EA_PORT: String(eaPort), METRICS_PORT: String(metricsPort), FEED_API_KEY: FEED_KEY },
      /adapter listening on/,
    )
    expect(listeningAddresses(eaPort)).toEqual([LOOPBACK_V4])
    expect(listeningAddresses(metricsPort)).toEqual([LOOPBACK_V4])
    expect(child.output()).toContain(
      `feedrunner adapter listening on http://127.0.0.1:${eaPort} (metrics http://127.0.0.1:${metricsPort}/metrics)`,
    )
    expect(warnings(child.output())).toEqual([])
  }, 90_000)

  it('EA_HOST=0.0.0.0: every interface, said as such, and one warning of what is exposed', async () => {
    const [eaPort, metricsPort] = [await freePort(), await freePort()]
    const child = await startUntil(
      ['adapter'],
      {
        EA_HOST: '0.0.0.0',
        EA_PORT: String(eaPort),
        METRICS_PORT: String(metricsPort),
        FEED_API_KEY: FEED_KEY,
      },
      /is not loopback/,
    )
    expect(listeningAddresses(eaPort)).toEqual(['00000000'])
    expect(listeningAddresses(metricsPort)).toEqual(['00000000'])
    expect(child.output()).toContain(
      `feedrunner adapter listening on http://0.0.0.0:${eaPort} (metrics http://0.0.0.0:${metricsPort}/metrics)`,
    )
    const [warning, ...more] = warnings(child.output())
    expect(more).toEqual([])
    expect(warning!.level).toBe(40)
    expect(warning!.exposed).toEqual([`http://0.0.0.0:${eaPort}`, `http://0.0.0.0:${metricsPort}`])
    expect(warning!.msg).toContain(
      `POST / at http://0.0.0.0:${eaPort}, where each ##signKey spends FEED_API_KEY`,
    )
    expect(warning!.msg).toContain(`/metrics at http://0.0.0.0:${metricsPort}/metrics`)
    expect(child.output()).not.toContain(FEED_KEY)
  }, 90_000)

  it("a worker's OPERATIONS_PORT: loopback by default", async () => {
    const port = await freePort()
    const child = await startUntil(
      ['worker'],
      { OPERATIONS_PORT: String(port), SPORTS_URL: 'http://127.0.0.1:9', FEED_API_KEY: FEED_KEY },
      /metrics http:\S+\/metrics/,
    )
    expect(listeningAddresses(port)).toEqual([LOOPBACK_V4])
    expect(child.output()).toContain(`metrics http://127.0.0.1:${port}/metrics`)
    expect(warnings(child.output())).toEqual([])
  }, 90_000)
})

describe('what a bind beyond loopback exposes', () => {
  const adapter = { listening: 'http://10.0.0.5:8080', loopback: false, what: 'adapter' } as const
  const metrics = { listening: 'http://10.0.0.5:9080', loopback: false, what: 'metrics' } as const
  const settings = { EA_HOST: '10.0.0.5', SIGNKEY_MODE: 'static' } as const

  it('an adapter that spends no key of the operator (client keys only), metrics off: nothing', () => {
    expect(exposureWarning({ ...settings, FEED_API_KEY: undefined }, [adapter])).toBeUndefined()
    expect(
      exposureWarning({ ...settings, FEED_API_KEY: 'k' }, [{ ...adapter, loopback: true }]),
    ).toBeUndefined()
  })

  it('names the key each request spends, and the metrics', () => {
    expect(exposureWarning({ ...settings, FEED_API_KEY: undefined }, [adapter, metrics])).toMatch(
      /^EA_HOST=10\.0\.0\.5 is not loopback: .*\/metrics at http:\/\/10\.0\.0\.5:9080\/metrics/,
    )
    expect(
      exposureWarning({ ...settings, SIGNKEY_MODE: 'signed', FEED_API_KEY: undefined }, [adapter]),
    ).toContain('POST / at http://10.0.0.5:8080, where each ##signKey spends a token signed with')
  })
})
