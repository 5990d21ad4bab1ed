import { defineConfig } from 'vitest/config'

/**
 * The unit tests StrykerJS runs against each mutant (`npm run mutation`): only files that run in
 * process, in milliseconds, with no anvil, Redis, spawned CLI or feed service, so a mutant costs a
 * fraction of a second. A test that needs a process is out of reach of an in-process mutant anyway.
 */
export const mutationTests = [
  'test/signkey/*.test.ts',
  'test/net/*.test.ts',
  'test/reduce/*.test.ts',
]

export default defineConfig({
  test: {
    include: mutationTests,
    testTimeout: 30_000,
    // One worker: the machine is shared; StrykerJS runs its own workers around this.
    maxWorkers: 1,
    isolate: false,
    reporters: ['dot'],
  },
})
