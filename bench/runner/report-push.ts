/**
 * The push phases' tables (phases/webhook.ts, cron.ts, flux.ts) and their targets, as ratios and
 * counts of this run's own figures.
 */
import type { CronResult } from './phases/cron.ts'
import type { FluxResult, FluxStretch } from './phases/flux.ts'
import type { WebhookResult } from './phases/webhook.ts'
import { target, type Target } from './report.ts'
import { table } from './table.ts'

export interface PushRun {
  webhook?: WebhookResult
  cron?: CronResult
  flux?: FluxResult
}

const ms = (value: number) => `${value} ms`
const byMethod = (calls: Record<string, number>) =>
  Object.entries(calls)
    .map(([method, value]) => `${method} ${value}`)
    .join(', ') || '-'

function printWebhook(result: WebhookResult): void {
  const { emptyRoute, webhook } = result
  console.log(
    `\nWebhook: ${result.ratePerSecond} calls a second for ${result.seconds} s, open loop, the same server's empty route first`,
  )
  console.log(
    table([
      ['route', 'calls', 'statuses', 'p50', 'p99', 'max'],
      ...[
        ['empty (404)', emptyRoute],
        ['runs endpoint', webhook],
      ].map(([name, route]) => {
        const { calls, statuses, latencyMs } = route as WebhookResult['emptyRoute']
        return [
          name as string,
          String(calls),
          JSON.stringify(statuses),
          ms(latencyMs.p50),
          ms(latencyMs.p99),
          ms(latencyMs.max),
        ]
      }),
    ]),
  )
  console.log(
    `runs started ${webhook.runs}, fulfilled ${webhook.runsFulfilled}; Redis commands a call ${result.redisCommandsPerCall}; runner idle (one webhook job): ${result.idle.cpuMsPerSecond} CPU ms a second`,
  )
}

function printCron(result: CronResult): void {
  console.log(
    `\nCron: ${result.jobs} jobs; idle with one job, then with ${result.jobs} not due, then every ${result.everySeconds} s`,
  )
  console.log(
    table([
      ['stretch', 's', 'runner CPU ms/s', 'Redis commands/s', 'RPC calls/s'],
      ...[
        ['one job, idle', result.idleOneJob],
        [`${result.jobs} jobs loaded, idle`, result.idleLoaded],
      ].map(([name, costs]) => {
        const stretch = costs as CronResult['idleLoaded']
        const rate = (value: number) => (value / stretch.seconds).toFixed(2)
        return [
          name as string,
          String(stretch.seconds),
          String(stretch.cpuMsPerSecond),
          rate(stretch.redisCommands),
          rate(Object.values(stretch.rpcCalls).reduce((sum, value) => sum + value, 0)),
        ]
      }),
    ]),
  )
  const tick = result.perTick
  console.log(
    `a tick (${result.ticks} ticks): ${tick.redisCommands} Redis commands, ${tick.rpcCalls} RPC calls (${byMethod(tick.rpcByMethod)}), ${tick.cpuMs} runner CPU ms, beyond the idle rate; ${result.jobs} jobs loaded cost ${result.idleCpuMsPerSecondBeyondOne} CPU ms a second more than one`,
  )
}

function printFlux(result: FluxResult): void {
  console.log(
    `\nFlux: a block every ${result.blockSeconds} s, every job polled every ${result.pollSeconds} s, one game-odds query for all`,
  )
  const row = (stretch: FluxStretch) => [
    String(stretch.jobs),
    String(stretch.blocks),
    String(stretch.pollsPerJob),
    String(stretch.rpc.perBlock),
    String(stretch.rpc.blockReadsPerBlock),
    String(stretch.rpc.pollReadsPerJobPerPoll),
    String(stretch.bridgeCallsPerPoll),
    String(stretch.fetchesPerPoll),
    String(stretch.redisCommandsPerPoll),
    String(stretch.runnerCpuMsPerSecond),
  ]
  console.log(
    table([
      [
        'jobs',
        'blocks',
        'polls/job',
        'RPC/block',
        'block reads/block',
        'poll reads/job/poll',
        'bridge calls/poll',
        'fetches/poll',
        'Redis/poll',
        'runner CPU ms/s',
      ],
      row(result.one),
      row(result.all),
    ]),
  )
  const gas = result.gasPerSubmission
  console.log(
    `RPC a block by method, ${result.all.jobs} jobs: ${byMethod(result.all.rpc.byMethodPerBlock)}; over the phase ${result.bridge.calls} bridge calls, ${result.bridge.fetches} answers of the feed service; gas a submission p50 ${gas.p50} (${gas.min}-${gas.max}, ${gas.submissions} submissions)`,
  )
}

export function printPush(push: PushRun): void {
  if (push.webhook) printWebhook(push.webhook)
  if (push.cron) printCron(push.cron)
  if (push.flux) printFlux(push.flux)
}

/** The push phases' targets, as the other targets are (report.ts). */
export function pushTargets(push: PushRun): Target[] {
  const targets: Target[] = []
  const { webhook, flux } = push
  if (webhook)
    targets.push(
      target(
        "webhook: p99 to the run's id <= 3 x the empty route's",
        webhook.p99Ratio,
        3,
        true,
        `${webhook.webhook.latencyMs.p99} / ${webhook.emptyRoute.latencyMs.p99} ms at ${webhook.ratePerSecond}/s`,
      ),
    )
  if (flux)
    targets.push(
      target(
        `flux: <= 1 block read a block with ${flux.all.jobs} jobs`,
        flux.all.rpc.blockReadsPerBlock,
        1,
        true,
        `1 job: ${flux.one.rpc.blockReadsPerBlock}; over ${flux.all.blocks} blocks`,
      ),
      target(
        `flux: <= 1 upstream fetch a poll period for ${flux.all.jobs} jobs of one query`,
        flux.all.fetchesPerPoll,
        1,
        true,
        `${flux.all.bridgeCallsPerPoll} bridge calls a poll`,
      ),
    )
  return targets
}
