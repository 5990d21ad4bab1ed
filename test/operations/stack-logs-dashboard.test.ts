import { existsSync, mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { chromium, type BrowserContext } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { DevStack } from '../../src/dev/stack.ts'
import type { RunRecord } from '../../src/runner/run-record.ts'
import {
  GAME_ODDS_EXTERNAL_JOB_ID,
  GAME_ODDS_JOB,
  startOperationsStack,
  type OperationsStack,
  type SentRequests,
} from './stack-support.ts'

const CHROMIUM = '/usr/bin/chromium'

// The metrics and health of such a stack: stack-metrics-health.test.ts.
describe('operations on the dev stack: metrics, health, dashboard and logs of real requests', () => {
  let operations: OperationsStack | undefined
  let stack: DevStack
  let lines: string[]
  let runs: Map<string, RunRecord>
  let sent: SentRequests
  let feedKey: string
  let nodeKey: string

  beforeAll(async () => {
    operations = await startOperationsStack()
    ;({ stack, lines, runs, sent, feedKey, nodeKey } = operations)
  }, 120_000)

  afterAll(async () => {
    await operations?.stop()
  })

  describe('logs', () => {
    it('give every line about a run its request id and job', () => {
      const parsed = lines.map((line) => JSON.parse(line) as Record<string, unknown>)
      for (const [outcome, requestId] of Object.entries(sent)) {
        const about = parsed.filter((entry) =>
          JSON.stringify(entry).toLowerCase().includes(requestId.toLowerCase()),
        )
        expect(about.length, `${outcome} run's lines`).toBeGreaterThanOrEqual(2)
        for (const entry of about) {
          expect(String(entry.requestId).toLowerCase(), JSON.stringify(entry)).toBe(
            requestId.toLowerCase(),
          )
          expect(typeof entry.job, JSON.stringify(entry)).toBe('string')
        }
      }
      const fulfilledLines = parsed.filter(
        (entry) => String(entry.requestId).toLowerCase() === sent.fulfilled.toLowerCase(),
      )
      expect(fulfilledLines.map((entry) => entry.msg)).toEqual(
        expect.arrayContaining([
          'request received',
          'run started',
          'task finished',
          'run fulfilled',
        ]),
      )
      // The runner names the job; the adapter, which only sees the bridge call, by its external id.
      const jobOf = (entry: Record<string, unknown>) =>
        entry.part === 'adapter' ? GAME_ODDS_EXTERNAL_JOB_ID : GAME_ODDS_JOB
      expect(fulfilledLines.filter((entry) => entry.job !== jobOf(entry))).toEqual([])
    })

    it('hold no secret: the logger removes keys by field and by value', () => {
      const all = lines.join('')
      expect(lines.length).toBeGreaterThan(20)
      for (const secret of [feedKey, nodeKey, nodeKey.slice(2)]) expect(all).not.toContain(secret)
    })
  })

  describe('dashboard in headless Chromium', () => {
    let browser: BrowserContext

    beforeAll(async () => {
      if (!existsSync(CHROMIUM)) {
        throw new Error(
          `${CHROMIUM} is missing: the dashboard test drives Debian's chromium. Install it with \`sudo apt-get install -y chromium\` (.ci/run does this).`,
        )
      }
      browser = await chromium.launchPersistentContext(
        mkdtempSync(join(tmpdir(), 'feedrunner-chromium-')),
        {
          executablePath: CHROMIUM,
          args: [
            '--headless',
            '--no-sandbox',
            '--disable-gpu',
            '--disable-quic',
            '--no-first-run',
            '--disable-background-networking',
            '--disable-component-update',
            '--disable-sync',
          ],
        },
      )
    }, 60_000)

    afterAll(async () => {
      await browser?.close()
    })

    it('shows the queues in Bull Board, read-only', async () => {
      const page = await browser.newPage()
      const response = await page.goto(`${stack.adapter.url}/dashboard/queues`)
      expect(response?.status()).toBe(200)
      for (const queue of ['requests-31337', 'fetch-sports', 'fetch-weather'])
        await page.getByText(queue, { exact: true }).first().waitFor({ timeout: 15_000 })
      // Read-only: Bull Board's API refuses actions on jobs.
      const action = await fetch(
        `${stack.adapter.url}/dashboard/queues/api/queues/requests-31337/pause`,
        { method: 'PUT' },
      )
      expect(action.status).toBeGreaterThanOrEqual(400)
      await page.close()
    }, 30_000)

    it('shows the fulfilled run with its job and transaction, and the refused one with its reason', async () => {
      const page = await browser.newPage()
      const response = await page.goto(`${stack.adapter.url}/dashboard`)
      expect(response?.status()).toBe(200)
      expect(response?.headers()['content-type']).toContain('text/html')
      const fulfilled = page.locator(`tr.run[data-request-id="${sent.fulfilled.toLowerCase()}"]`)
      await fulfilled.waitFor({ timeout: 10_000 })
      expect(await fulfilled.locator('td.state').textContent()).toBe('fulfilled')
      const text = await fulfilled.textContent()
      expect(text).toContain(GAME_ODDS_JOB)
      expect(text).toContain(runs.get(sent.fulfilled)!.txHash!.slice(0, 10))
      const refused = page.locator(`tr.run[data-request-id="${sent.refused.toLowerCase()}"]`)
      expect(await refused.textContent()).toContain("is not in the job's requesters")
      expect(await page.locator('#queues').textContent()).toContain('fetch-sports')
      await page.close()
    }, 30_000)
  })
})
