/**
 * The fault search (`npm run chaos`): seeded random schedules of requests and faults over a real
 * stack, each checked against invariants read from the chain. docs/reliability.md, "Fault search".
 *
 *   npm run chaos                              one schedule of a random seed
 *   npm run chaos -- --schedules 20            twenty, seeds counting up from a random one
 *   npm run chaos -- --seed 1234               that schedule again (same requests, same faults, same offsets)
 *   npm run chaos -- --seed 7,8,9              those three
 *   npm run chaos -- --seed 7 --schedules 3    7, 8 and 9
 *   npm run chaos -- --seed 7 --dry-run        print the schedule without running it
 *   npm run chaos -- --seed 7 --output         with each process's last lines when a schedule finds a violation
 *                                              (every process's whole log is kept in .cache/chaos-logs/ anyway)
 *   npm run chaos -- --seed 7 --report F.json  also write the counts to F.json (CI's closing line reads them)
 *   npm run chaos -- --mutants                 the planted bugs of chaos/mutants/ instead (chaos/mutants.ts)
 *
 * Exits non-zero when any schedule broke an invariant; the last line reads
 * `chaos: K schedules, V violations`.
 */
import { execFileSync } from 'node:child_process'
import { randomInt } from 'node:crypto'
import { writeFileSync } from 'node:fs'
import { dirname, join, relative } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import { stopAllOwnedProcesses } from '../src/dev/process.ts'
import { describeAdmission, describeAdmissionOutcome } from './admission.ts'
import { keepLogs } from './kept-logs.ts'
import { mutantsAsked, runMutants } from './mutants.ts'
import { describeOutputs, describeResult, describeSchedule, replayCommand } from './report.ts'
import { runSchedule, stopRunningStack } from './run.ts'
import { scheduleOf } from './schedule.ts'

/** Where a violating schedule's logs are kept: under the checkout's ignored .cache/. */
const LOGS = join(dirname(fileURLToPath(import.meta.url)), '..', '.cache', 'chaos-logs')

interface Options {
  seeds: number[]
  dryRun: boolean
  output: boolean
  report?: string
}

function optionsOf(argv: readonly string[]): Options {
  const { values } = parseArgs({
    args: [...argv],
    options: {
      seed: { type: 'string', multiple: true },
      schedules: { type: 'string' },
      'dry-run': { type: 'boolean', default: false },
      output: { type: 'boolean', default: false },
      report: { type: 'string' },
    },
    strict: true,
  })
  const given = (values.seed ?? []).flatMap((list) => list.split(',')).map((seed) => seed.trim())
  for (const seed of given)
    if (!/^\d+$/.test(seed) || Number(seed) > 0xffffffff)
      throw new Error(`--seed ${seed}: a seed is a whole number from 0 to 4294967295`)
  const count = values.schedules === undefined ? undefined : Number(values.schedules)
  if (count !== undefined && !(Number.isInteger(count) && count > 0))
    throw new Error(`--schedules ${values.schedules}: give a whole number above 0`)
  const seeds =
    given.length > 1
      ? given.map(Number)
      : Array.from(
          { length: count ?? 1 },
          (_, index) =>
            ((given[0] === undefined ? randomInt(0, 2 ** 31) : Number(given[0])) + index) >>> 0,
        )
  return {
    seeds,
    dryRun: values['dry-run'],
    output: values.output,
    ...(values.report ? { report: values.report } : {}),
  }
}

function faketimeInstalled(): boolean {
  try {
    execFileSync('faketime', ['--version'], { stdio: 'ignore' })
    return true
  } catch {
    return false
  }
}

async function main(): Promise<number> {
  let options: Options
  try {
    options = optionsOf(process.argv.slice(2))
  } catch (error) {
    console.error(`chaos: ${(error as Error).message}`)
    return 2
  }
  const skewed = options.seeds.some((seed) =>
    scheduleOf(seed).parts.some((part) => part.clockOffsetSeconds !== 0),
  )
  if (!options.dryRun && skewed && !faketimeInstalled()) {
    console.error(
      'chaos: faketime is not installed and these schedules offset clocks with it: `sudo apt-get install -y faketime` (Debian/Ubuntu)',
    )
    return 2
  }
  let violations = 0
  const failed: number[] = []
  for (const seed of options.seeds) {
    const schedule = scheduleOf(seed)
    for (const line of [...describeSchedule(schedule), describeAdmission(schedule)])
      console.log(line)
    if (options.dryRun) continue
    // Interrupted: the signal's handler ends the process once every process this run started is gone.
    if (interrupted) return new Promise<number>(() => undefined)
    const result = await runSchedule(schedule)
    if (interrupted) {
      console.log(`chaos: interrupted during schedule ${seed}; its stack is being stopped`)
      return new Promise<number>(() => undefined)
    }
    for (const line of describeResult(result)) console.log(line)
    if (result.history) console.log(describeAdmissionOutcome(schedule, result.history))
    if (options.output && result.violations.length > 0)
      for (const line of describeOutputs(result)) console.log(line)
    if (result.violations.length > 0)
      console.log(
        `  each process's log: ${relative(process.cwd(), keepLogs(LOGS, seed, result.outputs))}`,
      )
    violations += result.violations.length
    if (result.violations.length > 0) failed.push(seed)
  }
  if (failed.length > 0)
    console.log(
      `seeds with violations: ${failed.join(', ')} (replay one: ${replayCommand(failed[0]!)})`,
    )
  const schedules = options.dryRun ? 0 : options.seeds.length
  if (options.report)
    writeFileSync(
      options.report,
      `${JSON.stringify({ schedules, violations, seedsWithViolations: failed }, null, 2)}\n`,
    )
  console.log(`chaos: ${schedules} schedules, ${violations} violations`)
  return violations > 0 ? 1 : 0
}

// The planted bugs: a run of its own, which stops its checks and removes its worktree when interrupted.
if (mutantsAsked(process.argv.slice(2))) process.exit(await runMutants(process.argv.slice(2)))

// Interrupted (Ctrl-C): the stack it started goes with it, files and all.
let interrupted = false
for (const signal of ['SIGINT', 'SIGTERM'] as const)
  process.once(signal, () => {
    interrupted = true
    void stopRunningStack()
      .then(() => stopAllOwnedProcesses())
      .finally(() => process.exit(130))
  })

process.exit(await main())
