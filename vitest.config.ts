import { defineConfig } from 'vitest/config'

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/support/global-setup.ts'],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    // Every file starts its own processes (anvil, feed service, adapter); two cores run two at a time.
    maxWorkers: 2,
    reporters: ['default'],
  },
})
