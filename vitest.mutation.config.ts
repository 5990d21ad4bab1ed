import { defineConfig } from 'vitest/config'

/**
 * The unit tests StrykerJS runs against the mutants of each folder (`npm run mutation`): only files
 * that run in process, in milliseconds to seconds, with no anvil, Redis or feed service. A test that
 * spawns a process is skipped in a mutation run (test/support/mutation.ts): the mutant is active in
 * the test's own process only, so a child never runs it and cannot kill it.
 */
export const mutationTests: Record<string, string[]> = {
  signkey: ['test/signkey/*.test.ts'],
  net: ['test/net/*.test.ts'],
  reduce: ['test/reduce/*.test.ts'],
  config: ['test/config/errors*.test.ts', 'test/config/settings*.test.ts'],
  pipeline: [
    'test/pipeline/executor.test.ts',
    'test/pipeline/loader.test.ts',
    'test/pipeline/spec-errors.test.ts',
    'test/pipeline/dot-values.test.ts',
    'test/pipeline/run-variables.test.ts',
    'test/pipeline/docs-specs.test.ts',
    'test/pipeline/published-specs.test.ts',
    'test/pipeline/forwarding.test.ts',
    // The spec types written since the list was first made (cron, webhook, flux monitor), the jobs/
    // specs run against a bridge, and the lossless JSON the tasks read: each ran no mutant of its
    // code before (src/pipeline/job-spec/schedule.ts, flux-schema.ts, describe.ts had no coverage).
    'test/pipeline/job-types.test.ts',
    'test/pipeline/flux-spec.test.ts',
    'test/pipeline/jobs.test.ts',
    'test/pipeline/json.test.ts',
    'test/pipeline/dot-numerals.test.ts',
    'test/pipeline/tasks/*.test.ts',
    'test/pipeline/chainlink/*.test.ts',
    // The loader's and the executor's edges: limits, lines, attribute spellings, stops, failEarly.
    'test/pipeline/loader-edges.test.ts',
    'test/pipeline/executor-edges.test.ts',
    'test/pipeline/spec-fields-edges.test.ts',
    // The survivors of a mutation run judged one by one: DOT comments and lines, task order, run
    // variables, job ids, schedules, flux timers, the job table, the loader's references.
    'test/pipeline/*-survivors.test.ts',
  ],
}

// bin/mutation.ts names the folder it runs; without one, every folder's tests.
const folder = process.env.FEEDRUNNER_MUTATION_FOLDER

export default defineConfig({
  test: {
    include: folder ? (mutationTests[folder] ?? []) : Object.values(mutationTests).flat(),
    // Property runs of thousands of random inputs: seconds per mutant for few kills.
    exclude: ['test/**/*fuzz*.test.ts'],
    testTimeout: 30_000,
    // One worker: the machine is shared; StrykerJS runs its own workers around this.
    maxWorkers: 1,
    // Modules stay loaded between mutant runs (StrykerJS switches a mutant on at run time); a static
    // mutant is still run on freshly loaded modules.
    isolate: false,
    reporters: ['dot'],
  },
})
