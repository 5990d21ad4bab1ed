import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startAdapter, type RunningAdapter } from '../../src/adapter/adapter.ts'
import { errorKindOf } from '../../src/config/errors.ts'
import { createLogger } from '../../src/config/logger.ts'
import { parseSettings, type Settings } from '../../src/config/settings.ts'
import { dashboardAccess, isLoopbackHost, showsToken } from '../../src/dashboard/access.ts'
import { mountOperations } from '../../src/dashboard/mount.ts'
import { freePort, isPortFree } from '../../src/dev/ports.ts'
import { Connections } from '../../src/queue/connections.ts'
import { testRedisUrl, uniquePrefix } from '../support/redis.ts'

const TOKEN = 'dashboard-token-4f1c9a7e2b6d8035'

function dashboardSettings(extra: Record<string, string> = {}): Settings {
  return parseSettings({
    REDIS_URL: testRedisUrl(),
    QUEUE_PREFIX: uniquePrefix('dashboard-access').replace(/:/g, '.'),
    DASHBOARD_ENABLED: 'true',
    LOG_LEVEL: 'info',
    LOG_FORMAT: 'json',
    ...extra,
  })
}

/** The adapter with the operations mounted, as `feedrunner adapter` starts it, on `host`. */
async function startWithDashboard(
  settings: Settings,
  host: string,
  port: number,
  lines: string[],
): Promise<{ adapter: RunningAdapter; connections: Connections }> {
  const logger = createLogger(settings, 'dashboard-access', {
    write: (line: string) => void lines.push(line),
  })
  const connections = new Connections(settings, logger)
  try {
    const adapter = await startAdapter({
      settings,
      logger,
      connections,
      framework: { EA_PORT: port, EA_HOST: host, METRICS_ENABLED: false },
      mount: (api, bind) => mountOperations(api, settings, logger, connections, bind),
    })
    return { adapter, connections }
  } catch (error) {
    await connections.close()
    throw error
  }
}

describe('who may open the dashboard', () => {
  it('tells loopback addresses from the others', () => {
    for (const host of ['127.0.0.1', '127.8.0.1', '::1', '[::1]', 'localhost', '::ffff:127.0.0.1'])
      expect(isLoopbackHost(host), host).toBe(true)
    for (const host of ['::', '0.0.0.0', '10.0.0.5', '::ffff:10.0.0.5', 'example.org', '128.0.0.1'])
      expect(isLoopbackHost(host), host).toBe(false)
  })

  it('refuses a dashboard off loopback without a token, naming the settings and the remedy', () => {
    const refusal = (() => {
      try {
        dashboardAccess({ DASHBOARD_TOKEN: undefined }, '::')
      } catch (error) {
        return error
      }
    })()
    expect(errorKindOf(refusal)).toBe('config')
    const message = (refusal as Error).message
    for (const words of ['DASHBOARD_TOKEN', 'EA_HOST=:: (every interface)', 'EA_HOST=127.0.0.1'])
      expect(message).toContain(words)
    expect(dashboardAccess({ DASHBOARD_TOKEN: undefined }, '127.0.0.1').kind).toBe('loopback')
    expect(dashboardAccess({ DASHBOARD_TOKEN: TOKEN }, '::').kind).toBe('token')
  })

  it('takes the token as the Basic password (any user) or as a Bearer token, nothing else', () => {
    const access = dashboardAccess({ DASHBOARD_TOKEN: TOKEN }, '::')
    if (access.kind !== 'token') throw new Error('expected a token')
    const basic = (user: string, password: string) =>
      `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`
    expect(showsToken(basic('ops', TOKEN), access.digest)).toBe(true)
    expect(showsToken(basic('', TOKEN), access.digest)).toBe(true)
    expect(showsToken(`Bearer ${TOKEN}`, access.digest)).toBe(true)
    expect(showsToken(`bearer ${TOKEN}`, access.digest)).toBe(true)
    for (const wrong of [
      undefined,
      '',
      TOKEN,
      `Bearer ${TOKEN}x`,
      `Bearer ${TOKEN.slice(0, -1)}`,
      basic(TOKEN, 'x'),
      `Basic ${Buffer.from(TOKEN).toString('base64')}`,
      `Token ${TOKEN}`,
    ])
      expect(showsToken(wrong, access.digest), String(wrong)).toBe(false)
  })

  it('a too short DASHBOARD_TOKEN is a settings error that does not print it', () => {
    let message = ''
    try {
      parseSettings({ DASHBOARD_TOKEN: 'short-secret' })
    } catch (error) {
      message = (error as Error).message
    }
    expect(message).toContain('DASHBOARD_TOKEN')
    expect(message).not.toContain('short-secret')
  })
})

describe('the adapter with DASHBOARD_ENABLED', () => {
  it('does not start on every interface without DASHBOARD_TOKEN, and listens on nothing', async () => {
    const port = await freePort()
    const lines: string[] = []
    const started = startWithDashboard(dashboardSettings(), '0.0.0.0', port, lines)
    await expect(started).rejects.toThrow(/DASHBOARD_TOKEN is not set/)
    expect(await isPortFree(port)).toBe(true)
  })

  describe('with DASHBOARD_TOKEN', () => {
    const lines: string[] = []
    let running: { adapter: RunningAdapter; connections: Connections }
    beforeAll(async () => {
      running = await startWithDashboard(
        dashboardSettings({ DASHBOARD_TOKEN: TOKEN }),
        '127.0.0.1',
        0,
        lines,
      )
    })
    afterAll(async () => {
      await running?.adapter.close()
      await running?.connections.close()
    })

    const get = (path: string, authorization?: string) =>
      fetch(`${running.adapter.url}${path}`, {
        headers: authorization === undefined ? {} : { authorization },
      })

    it('answers 401 in the adapter JSON error shape to every dashboard path without it', async () => {
      for (const path of ['/dashboard', '/dashboard/queues', '/dashboard/queues/api/queues']) {
        for (const authorization of [undefined, 'Bearer not-the-token-at-all-000000']) {
          const answer = await get(path, authorization)
          expect(answer.status, path).toBe(401)
          expect(answer.headers.get('www-authenticate')).toContain('Basic realm=')
          const body = (await answer.json()) as {
            status: string
            statusCode: number
            error: { name: string; message: string }
          }
          expect(body).toMatchObject({
            status: 'errored',
            statusCode: 401,
            error: { name: 'DashboardUnauthorised' },
          })
          expect(body.error.message).toContain('DASHBOARD_TOKEN')
        }
      }
    })

    it('serves the runs page and the queue API to a request that shows it', async () => {
      const basic = `Basic ${Buffer.from(`operator:${TOKEN}`).toString('base64')}`
      const page = await get('/dashboard', basic)
      expect(page.status).toBe(200)
      expect(page.headers.get('content-type')).toContain('text/html')
      expect(await page.text()).toContain('feedrunner')
      const queues = await get('/dashboard/queues/api/queues', `Bearer ${TOKEN}`)
      expect(queues.status).toBe(200)
      expect(JSON.stringify(await queues.json())).toContain('fetch-sports')
    })

    it('leaves the adapter, /live and /ready open, and never logs the token', async () => {
      expect((await get('/live')).status).toBe(200)
      const post = await fetch(running.adapter.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: '{"id": "1", "data": {"endpoint": "no-such-endpoint"}}',
      })
      expect(post.status).toBe(404)
      expect(lines.join('\n')).toContain('dashboard mounted')
      expect(lines.join('\n')).not.toContain(TOKEN)
    })
  })
})
