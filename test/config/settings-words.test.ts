import { describe, expect, it } from 'vitest'
import { parseSettings, SettingsError, SETTING_NAMES } from '../../src/config/settings.ts'
import { runFeedrunner } from '../e2e/support/cli.ts'
import { inMutationRun } from '../support/mutation.ts'

// A value the validator refuses reads as the setting and what it expects, in the project's words,
// never zod's internals ("Invalid input: expected number, received NaN").

/** The problems parseSettings reports for `env`, one string each. */
function problemsOf(env: Record<string, string>): readonly string[] {
  try {
    parseSettings(env)
    return []
  } catch (error) {
    if (!(error instanceof SettingsError)) throw error
    return error.problems
  }
}

const ZOD_WORDS = /Invalid input|Invalid option|Too small|Too big|received NaN|expected int\b|<=|>=/

describe('a refused setting in words', () => {
  it('says the setting, what it expects and what it got', () => {
    expect(problemsOf({ RUNNER_CONCURRENCY: 'abc' })).toEqual([
      'RUNNER_CONCURRENCY: expected a whole number of requests, 1 or more (got "abc")',
    ])
    expect(problemsOf({ METRICS_PORT: '70000' })).toEqual([
      'METRICS_PORT: expected a port number from 0 to 65535 (got "70000")',
    ])
    expect(problemsOf({ HEAP_GROWTH_PERCENT: '1.5' })).toEqual([
      'HEAP_GROWTH_PERCENT: expected a whole number of percent from 0 to 300 (got "1.5")',
    ])
    expect(problemsOf({ LOG_LEVEL: 'loud' })).toEqual([
      'LOG_LEVEL: expected one of fatal, error, warn, info, debug, trace, silent (got "loud")',
    ])
    expect(problemsOf({ RUN_ISOLATE_THREADS: '100' })).toEqual([
      'RUN_ISOLATE_THREADS: expected a whole number of threads from 1 to 64 (got "100")',
    ])
  })

  it("no setting answers any wrong value in zod's words", () => {
    const wrong = ['abc', '-1', '1.5', '99999999999999999', '0', 'true', 'x y']
    const said = SETTING_NAMES.flatMap((name) =>
      wrong.flatMap((value) => problemsOf({ [name]: value })),
    )
    // Most settings refuse most of these values: a check that saw none would check nothing.
    expect(said.length).toBeGreaterThan(200)
    expect(said.filter((problem) => ZOD_WORDS.test(problem))).toEqual([])
  })

  // Spawned: no mutant can reach the child (test/support/mutation.ts).
  it.skipIf(inMutationRun)(
    'as feedrunner prints it: one line under "Invalid settings", exit code 1',
    async () => {
      const ran = await runFeedrunner(['status'], { RUNNER_CONCURRENCY: 'abc' })
      expect(ran.code).toBe(1)
      expect(ran.stderr.trim()).toBe(
        'Invalid settings:\n  RUNNER_CONCURRENCY: expected a whole number of requests, 1 or more (got "abc")',
      )
    },
  )
})
