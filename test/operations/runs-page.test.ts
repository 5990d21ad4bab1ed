import { describe, expect, it } from 'vitest'
import { renderRunsPage } from '../../src/dashboard/runs-page.ts'
import type { RunRecord } from '../../src/runner/run-record.ts'

describe('the recent-runs page', () => {
  const run = {
    requestId: '0x' + '1'.repeat(64),
    job: 'game <odds>',
    state: 'errored',
    reason: 'upstream said <script>alert(1)</script> & "quoted"',
    txHash: '0x' + 'ab'.repeat(32),
    times: { running: Date.UTC(2026, 0, 2, 3, 4, 5) },
  } as unknown as RunRecord

  it('escapes every value taken from Redis', () => {
    const html = renderRunsPage(
      {
        queues: [
          { queue: 'requests<x>', waiting: 1, active: 2, delayed: 3, failed: 4, completed: 5 },
        ],
        runs: [run],
      },
      { queuesPath: '/dashboard/queues', readOnly: true },
    )
    expect(html).not.toContain('<script>')
    expect(html).toContain(
      'upstream said &lt;script&gt;alert(1)&lt;/script&gt; &amp; &quot;quoted&quot;',
    )
    expect(html).toContain('game &lt;odds&gt;')
    expect(html).toContain('requests&lt;x&gt;')
    expect(html).toContain(`data-request-id="${run.requestId}"`)
    expect(html).toContain('2026-01-02 03:04:05')
    expect(html).toContain('Bull Board, read-only')
  })

  it('says when there is no run yet', () => {
    expect(
      renderRunsPage({ queues: [], runs: [] }, { queuesPath: '/q', readOnly: false }),
    ).toContain('No runs yet.')
  })
})
