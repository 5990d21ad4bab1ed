import type { Command } from 'commander'
import { addStartPart } from './adapter.ts'
import type { RunsListOptions } from './runs-list.ts'
import { reader } from './readers.ts'

// Redis, ethers and the pipeline load only when one of these commands runs.
const actions = (): Promise<typeof import('./runner-actions.ts')> => import('./runner-actions.ts')
const readActions = (): Promise<typeof import('./read-actions.ts')> => import('./read-actions.ts')

export function register(program: Command): void {
  addStartPart(
    async (context) => (await actions()).runnerStartPart(context),
    async (settings, logger) =>
      (await import('./start-checks.ts')).checkRunnerSettings(settings, logger),
  )

  program
    .command('runner')
    .description(
      'The job runner alone: listens for OracleRequest logs on RPC_URL, runs the specs in JOBS_DIR, sends fulfilments',
    )
    .option('--no-listen', 'only work on queued requests (another process listens)')
    .option('--no-work', 'only listen and queue requests (other processes work)')
    .action(async (options: { listen: boolean; work: boolean }) =>
      (await actions()).runnerAction(options),
    )

  reader(program.command('status'))
    .description('Queue depths and the latest runs')
    .option('--runs <n>', 'how many recent runs to show', '20')
    .option('--json', 'print JSON (alone on stdout)')
    .action(async (options: { runs: string; json?: boolean }) =>
      (await readActions()).statusAction(options),
    )

  const runs = program.command('runs').description('Run records')
  reader(runs.command('show <requestId>'))
    .description(
      'One run: its state, each task output, the fulfilment transaction; for an errored run, what its requester can do (any unique start of the request id will do)',
    )
    .option('--json', 'print the run record as JSON (advice for its requester goes to stderr)')
    .action(async (requestId: string, options: { json?: boolean }) =>
      (await readActions()).runShowAction(requestId, options),
    )
  reader(runs.command('list'))
    .description(
      'Runs of this installation, newest first (the dev stack of this checkout, or REDIS_URL and QUEUE_PREFIX), filtered',
    )
    .option(
      '--state <state>',
      'only runs in this state (received, running, sent, fulfilled, errored, ...)',
    )
    .option('--trigger <trigger>', 'only runs started so: request, tick, call or round')
    .option('--job <job>', 'only runs of this job: part of its name, or its externalJobID')
    .option(
      '--since <age or time>',
      'only runs received since: an age (30m, 6h, 2d) or a date and time',
    )
    .option('--requester <address>', 'only runs this consumer requested')
    .option('--limit <n>', 'at most this many', '50')
    .option('--json', 'print JSON alone on stdout: the run records')
    .action(async (options: RunsListOptions) =>
      (await import('./runs-list.ts')).runsListAction(options),
    )
  runs
    .command('replay <requestId>')
    .description(
      'Run an errored run again after its cause was fixed, while its request is open on chain (no new request, no second payment); refuses a fulfilled, cancelled or expired request',
    )
    .action(async (requestId: string) =>
      (await import('./replay-action.ts')).runReplayAction(requestId),
    )
}
