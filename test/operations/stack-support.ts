import { cpSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { DestinationStream } from 'pino'
import { createLogger } from '../../src/config/logger.ts'
import { parseSettings } from '../../src/config/settings.ts'
import { ANVIL_PRIVATE_KEYS } from '../../src/dev/anvil.ts'
import { waitFor } from '../../src/dev/process.ts'
import { sendConsumerRequests, type ConsumerRequest } from '../../src/dev/requests.ts'
import { startDevStack, type DevStack } from '../../src/dev/stack.ts'
import { startOperationsServer, type OperationsServer } from '../../src/health/index.ts'
import { FINAL_RUN_STATES, type RunRecord } from '../../src/runner/run-record.ts'
import { testRedisUrl, uniquePrefix } from '../support/redis.ts'
import { parsePrometheus, type Sample } from './support.ts'

const projectJobs = join(import.meta.dirname, '../../jobs')
export const GAME_ODDS_JOB = 'datafeed game-odds (uint256)'
export const GAME_ODDS_EXTERNAL_JOB_ID = '3f1c7d2a-6b1e-4f0a-9c55-0a1b2c3d4e01'
export const REFUSING_JOB = 'ops-refuses-everyone'

function gameOdds(date: string): Array<[string, string]> {
  return [
    ['region', 'england'],
    ['sport', 'soccer'],
    ['league', 'epl'],
    ['date', date],
    ['homeTeam', 'Manchester United'],
    ['path', '$.data.homeMoneyLine'],
    ['times', '100'],
  ]
}

/** The request ids of the three requests, by the state their run must end in. */
export type SentRequests = Record<'fulfilled' | 'errored' | 'refused', string>

/** A dev stack after three real requests ran to their end, with what the operations tests read. */
export interface OperationsStack {
  stack: DevStack
  ops: OperationsServer
  /** The scrape of the operations server's /metrics once the three runs ended, and its samples. */
  metricsBody: string
  samples: Sample[]
  /** Every line the stack logged (JSON, debug level). */
  lines: string[]
  runs: Map<string, RunRecord>
  sent: SentRequests
  feedKey: string
  nodeKey: string
  stop(): Promise<void>
}

/**
 * Starts a dev stack (with the dashboard, JSON logs at debug kept in `lines`) and an operations
 * server, and runs three game-odds requests to their end: one fulfilled, one errored (no game on
 * that day: the feed service answers 404), one refused (a job that admits only a requester that
 * never asks). Stops what it started when it fails.
 */
export async function startOperationsStack(): Promise<OperationsStack> {
  const lines: string[] = []
  const runs = new Map<string, RunRecord>()
  const sent: SentRequests = { fulfilled: '', errored: '', refused: '' }
  const feedKey = `ops-feed-key-${Math.random().toString(36).slice(2, 12)}`
  const nodeKey = ANVIL_PRIVATE_KEYS[1] as string

  const jobsDir = mkdtempSync(join(tmpdir(), 'feedrunner-ops-jobs-'))
  cpSync(projectJobs, jobsDir, { recursive: true })
  // A copy of game-odds that admits only a requester that never asks: its requests are refused.
  const spec = readFileSync(join(projectJobs, 'game-odds.toml'), 'utf8')
    .replace(/^name = .*$/m, `name = "${REFUSING_JOB}"`)
    .replace(/^externalJobID = .*$/m, 'externalJobID = "0b7a1c4e-0000-4000-8000-0000000000aa"')
  writeFileSync(
    join(jobsDir, 'refusing.toml'),
    `requesters = ["0x000000000000000000000000000000000000dEaD"]\n${spec}`,
  )

  const env = {
    ...process.env,
    REDIS_URL: testRedisUrl(),
    JOBS_DIR: jobsDir,
    LOG_LEVEL: 'debug',
    EA_PORT: '',
    DASHBOARD_ENABLED: 'true',
    LOG_FORMAT: 'json',
  }
  const destination: DestinationStream = { write: (line: string) => void lines.push(line) }
  const logger = createLogger(
    parseSettings({ ...env, FEED_API_KEY: feedKey, NODE_PRIVATE_KEY: nodeKey }),
    'ops-test',
    destination,
  )
  const stack = await startDevStack({
    env,
    prefix: uniquePrefix('ops'),
    feedKey,
    nodeKeys: [nodeKey],
    logger,
  })
  let ops: OperationsServer | undefined
  try {
    ops = await startOperationsServer({ port: 0, host: '127.0.0.1' })

    const registry = stack.runner!.registry
    const request = (job: string, date: string): ConsumerRequest => ({
      externalJobId: registry.byName(job)!.externalJobId,
      valueType: 'uint256',
      params: gameOdds(date),
      payment: 0n,
    })
    const [fulfilled, errored, refused] = await sendConsumerRequests(
      stack.contracts.consumer,
      stack.contracts.deployer,
      [
        request(GAME_ODDS_JOB, '2024-08-16'),
        // No game on that day: the feed service answers 404 and the run errors.
        request(GAME_ODDS_JOB, '2024-01-01'),
        request(REFUSING_JOB, '2024-08-16'),
      ],
    )
    Object.assign(sent, {
      fulfilled: fulfilled!.requestId,
      errored: errored!.requestId,
      refused: refused!.requestId,
    })
    for (const requestId of Object.values(sent)) {
      await waitFor(
        `run ${requestId} to end`,
        async () => {
          const run = await stack.runner!.runs.get(requestId)
          if (run && FINAL_RUN_STATES.includes(run.state)) runs.set(requestId, run)
          return runs.has(requestId)
        },
        30_000,
      )
    }
    const metricsBody = await (await fetch(`${ops.url}/metrics`)).text()
    const samples = parsePrometheus(metricsBody)
    return {
      stack,
      ops,
      metricsBody,
      samples,
      lines,
      runs,
      sent,
      feedKey,
      nodeKey,
      async stop() {
        await ops?.close()
        await stack.stop()
      },
    }
  } catch (error) {
    await ops?.close()
    await stack.stop()
    throw error
  }
}
