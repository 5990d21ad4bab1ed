import { presentVariables } from '../config/settings.ts'
import { buildDemoCases, runDemoCases, type DemoResult } from '../dev/demo.ts'
import { runPushChecks, type PushCheck } from '../dev/push-demo.ts'
import { DEV_PUSH_FEEDS } from '../dev/push-feeds.ts'
import { startStack } from './dev-actions.ts'
import { renderTable } from './table.ts'

export async function demoAction(options: { timeout: string }): Promise<void> {
  // Its own queue prefix (removed when it ends), chain and ports: a dev stack running beside it
  // keeps its queues, runs and request ids (two fresh chains give the same ids).
  const prefix = `${process.env.QUEUE_PREFIX || 'feedrunner'}-demo-${process.pid}`
  const { stack } = await startStack(
    { LOG_LEVEL: process.env.LOG_LEVEL ?? 'warn' },
    {
      prefix,
      clearPrefixOnStop: true,
      ownRedis: presentVariables(process.env).REDIS_URL === undefined,
      pushJobs: true,
    },
  )
  const timeoutMs = Number(options.timeout) * 1000
  let results: DemoResult[] = []
  let pushes: PushCheck[] = []
  try {
    const cases = await buildDemoCases(stack, stack.runner?.registry.jobs ?? [], (line) =>
      console.log(line),
    )
    console.log(
      `requesting ${cases.length} jobs on chain ${stack.contracts.chainId}, and reading what its ${DEV_PUSH_FEEDS.length} push jobs write...`,
    )
    ;[results, pushes] = await Promise.all([
      runDemoCases(stack, cases, timeoutMs),
      runPushChecks(stack, timeoutMs),
    ])
  } finally {
    await stack.stop()
  }
  console.log(requestsTable(results))
  console.log(`\n${pushesTable(pushes)}`)
  const failed = results.filter((result) => !result.ok).length
  const pushesFailed = pushes.filter((check) => !check.ok).length
  console.log(
    `\n${results.length - failed} of ${results.length} requests fulfilled with the expected value`,
  )
  console.log(
    `${pushes.length - pushesFailed} of ${pushes.length} push jobs wrote the expected value on chain`,
  )
  const passed = failed === 0 && results.length > 0 && pushesFailed === 0
  process.exit(passed ? 0 : 1)
}

function requestsTable(results: readonly DemoResult[]): string {
  return renderTable(
    ['job', 'parameters', 'on chain', 'expected', 'latency', ''],
    results.map((result) => [
      result.job.name,
      result.params.map(([key, value]) => `${key}=${value}`).join(' '),
      result.actual === undefined ? '(not fulfilled)' : String(result.actual),
      String(result.expected),
      result.latencyMs === undefined ? '' : `${result.latencyMs} ms`,
      result.ok ? 'ok' : 'FAILED',
    ]),
  )
}

/** Each push job: what was read from the chain, against the feed service's value. */
function pushesTable(checks: readonly PushCheck[]): string {
  return renderTable(
    ['push job', 'type', 'on chain', 'expected (feed service)', 'read from the chain', ''],
    checks.map((check) => [
      check.job ?? `jobs/push/${check.feed.file} (not loaded)`,
      check.feed.type,
      check.actual === undefined ? '(nothing)' : String(check.actual),
      `${check.expected} (${check.source})`,
      check.checked,
      check.ok ? 'ok' : 'FAILED',
    ]),
  )
}
