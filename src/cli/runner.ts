import type { Command } from 'commander'
import { createLogger } from '../config/logger.ts'
import { connectClient } from '../queue/connection.ts'
import { RunStore, type RunRecord } from '../runner/run-record.ts'
import { startRunnerFromSettings } from '../runner/start.ts'
import { readStatus } from '../runner/status.ts'
import { addStartPart } from './adapter.ts'
import { settingsOrExit, stopOnSignal } from './lifecycle.ts'
import { renderTable } from './table.ts'

export function register(program: Command): void {
  addStartPart(async (settings, logger) => {
    if (!settings.RPC_URL) {
      logger.warn('RPC_URL not set: this process runs no runner')
      return { name: 'runner (off)', close: async () => undefined }
    }
    const runner = await startRunnerFromSettings(settings, logger.child({ part: 'runner' }))
    console.log(`feedrunner runner watching ${runner.listener ? 'and working' : 'working'} on ${settings.RPC_URL}`)
    return { name: 'runner', close: () => runner.stop() }
  })

  program
    .command('runner')
    .description('The job runner alone: listens for OracleRequest logs on RPC_URL, runs the specs in JOBS_DIR, sends fulfilments')
    .option('--no-listen', 'only work on queued requests (another process listens)')
    .option('--no-work', 'only listen and queue requests (other processes work)')
    .action(async (options: { listen: boolean; work: boolean }) => {
      const settings = settingsOrExit()
      const logger = createLogger(settings, 'feedrunner-runner')
      const runner = await startRunnerFromSettings(settings, logger, { listen: options.listen, work: options.work }).catch((error: unknown) => {
        console.error(`feedrunner runner could not start: ${error instanceof Error ? error.message : String(error)}`)
        process.exit(1)
      })
      console.log(`feedrunner runner started (${options.listen ? 'listening' : 'not listening'}, ${options.work ? 'working' : 'not working'})`)
      stopOnSignal(() => runner.stop())
    })

  program
    .command('status')
    .description('Queue depths and the latest runs')
    .option('--runs <n>', 'how many recent runs to show', '20')
    .option('--json', 'print JSON')
    .action(async (options: { runs: string; json?: boolean }) => {
      const settings = settingsOrExit()
      const redis = await connectClient(settings.REDIS_URL).catch(exitWith)
      try {
        const report = await readStatus(redis, settings.QUEUE_PREFIX, Number(options.runs) || 20)
        if (options.json) console.log(JSON.stringify(report, null, 2))
        else {
          console.log(renderTable(['queue', 'waiting', 'active', 'delayed', 'failed', 'completed'], report.queues.map((q) => [q.queue, ...[q.waiting, q.active, q.delayed, q.failed, q.completed].map(String)])))
          console.log()
          console.log(report.runs.length === 0 ? 'no runs yet' : renderTable(['request', 'job', 'state', 'tx', 'reason'], report.runs.map(runRow)))
        }
      } catch (error) {
        console.error(`cannot read status: ${error instanceof Error ? error.message : String(error)}`)
        process.exitCode = 1
      } finally {
        redis.disconnect()
      }
    })

  program
    .command('runs')
    .description('Run records')
    .command('show <requestId>')
    .description('One run: its state, each task output, the fulfilment transaction')
    .action(async (requestId: string) => {
      const settings = settingsOrExit()
      const redis = await connectClient(settings.REDIS_URL).catch(exitWith)
      try {
        const run = await new RunStore(redis, `${settings.QUEUE_PREFIX}:runner`).get(requestId)
        if (!run) {
          console.error(`no run for request ${requestId}`)
          process.exitCode = 1
        } else console.log(JSON.stringify(run, null, 2))
      } finally {
        redis.disconnect()
      }
    })
}

function runRow(run: RunRecord): string[] {
  return [run.requestId.slice(0, 18) + '…', run.job, run.state, run.txHash ? run.txHash.slice(0, 14) + '…' : '', run.reason ?? '']
}

function exitWith(error: unknown): never {
  console.error(error instanceof Error ? error.message : String(error))
  process.exit(1)
}
