import type { StatusReport } from '../runner/status.ts'

/** Text for HTML: every value on the page comes from Redis (job names, reasons, upstream words). */
function escapeHtml(value: unknown): string {
  return String(value ?? '')
    .replaceAll('&', '&amp;')
    .replaceAll('<', '&lt;')
    .replaceAll('>', '&gt;')
    .replaceAll('"', '&quot;')
    .replaceAll("'", '&#39;')
}

function short(hex: string | undefined): string {
  if (!hex) return ''
  return hex.length > 18 ? `${hex.slice(0, 10)}…${hex.slice(-6)}` : hex
}

function when(times: Record<string, number> | undefined): string {
  const latest = Math.max(0, ...Object.values(times ?? {}))
  return latest > 0 ? new Date(latest).toISOString().replace('T', ' ').slice(0, 19) : ''
}

export interface RunsPageOptions {
  /** Where Bull Board is mounted (link). */
  queuesPath: string
  readOnly: boolean
}

/**
 * The recent-runs page: queue depths and the latest runs (state, job, fulfilment tx, reason), newest
 * first. Plain server-rendered HTML: it reads the same report as `feedrunner status`.
 */
export function renderRunsPage(report: StatusReport, options: RunsPageOptions): string {
  const queueRows = report.queues
    .map(
      (q) =>
        `<tr><td>${escapeHtml(q.queue)}</td><td>${q.waiting}</td><td>${q.active}</td><td>${q.delayed}</td><td>${q.failed}</td><td>${q.completed}</td></tr>`,
    )
    .join('\n')
  const runRows = report.runs
    .map(
      (run) =>
        `<tr class="run state-${escapeHtml(run.state)}" data-request-id="${escapeHtml(run.requestId)}">` +
        `<td>${escapeHtml(when(run.times))}</td>` +
        `<td title="${escapeHtml(run.requestId)}"><code>${escapeHtml(short(run.requestId))}</code></td>` +
        `<td>${escapeHtml(run.job)}</td>` +
        `<td class="state">${escapeHtml(run.state)}${run.quarantined ? ' <span class="quarantined">(quarantined)</span>' : ''}${run.replays?.length ? ` <span class="replays">(replayed ${run.replays.length}×)</span>` : ''}</td>` +
        `<td title="${escapeHtml(run.txHash)}"><code>${escapeHtml(short(run.txHash))}</code></td>` +
        `<td>${escapeHtml(run.reason)}</td></tr>`,
    )
    .join('\n')
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>feedrunner: queues and recent runs</title>
<style>
  body { font-family: system-ui, sans-serif; margin: 2rem; color: #1f2933; }
  table { border-collapse: collapse; margin-bottom: 2rem; }
  th, td { border-bottom: 1px solid #d9e2ec; padding: .3rem .8rem; text-align: left; }
  th { background: #f0f4f8; }
  .state-fulfilled .state { color: #2f8132; font-weight: 600; }
  .state-errored .state, .state-refused .state { color: #ba2525; font-weight: 600; }
</style>
</head>
<body>
<h1>feedrunner</h1>
<p><a href="${escapeHtml(options.queuesPath)}">Queues (Bull Board${options.readOnly ? ', read-only' : ''})</a> · <a href="">refresh</a></p>
<h2>Queues</h2>
<table id="queues">
<thead><tr><th>queue</th><th>waiting</th><th>active</th><th>delayed</th><th>failed</th><th>completed</th></tr></thead>
<tbody>
${queueRows}
</tbody>
</table>
<h2>Recent runs</h2>
${
  report.runs.length === 0
    ? '<p id="no-runs">No runs yet.</p>'
    : `<table id="runs">
<thead><tr><th>time (UTC)</th><th>request</th><th>job</th><th>state</th><th>fulfilment tx</th><th>reason</th></tr></thead>
<tbody>
${runRows}
</tbody>
</table>`
}
</body>
</html>
`
}
