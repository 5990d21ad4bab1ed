// StrykerJS over the pure modules (`npm run mutation`, bin/mutation.ts). Not in CI: a full run
// takes the better part of an hour on two shared cores (docs/reliability.md, "Mutation score").

/** The folders whose mutation score docs/reliability.md reports, and the files mutated in each. */
export const mutationFolders = {
  signkey: ['src/signkey/**/*.ts'],
  net: ['src/net/**/*.ts'],
  reduce: ['src/reduce/**/*.ts'],
  config: ['src/config/settings*.ts', 'src/config/errors.ts'],
  pipeline: [
    'src/pipeline/tasks/**/*.ts',
    'src/pipeline/job-spec/**/*.ts',
    'src/pipeline/executor.ts',
  ],
}

/** @type {import('@stryker-mutator/api/core').PartialStrykerOptions} */
export default {
  testRunner: 'vitest',
  plugins: ['@stryker-mutator/vitest-runner'],
  vitest: { configFile: 'vitest.mutation.config.ts' },
  coverageAnalysis: 'perTest',
  mutate: Object.values(mutationFolders).flat(),
  // Two cores shared with other work: one mutant at a time, and the script runs niced.
  concurrency: 1,
  timeoutMS: 10_000,
  reporters: ['clear-text', 'html', 'json', 'progress'],
  htmlReporter: { fileName: 'reports/mutation/index.html' },
  jsonReporter: { fileName: 'reports/mutation/mutation.json' },
  tempDirName: '.stryker-tmp',
  cleanTempDir: 'always',
  ignorePatterns: [
    'dist',
    'dist.tmp',
    'dist.old',
    'bench',
    'chaos',
    'reports',
    '.feedrunner',
    '.cache',
    'keys',
    '.stryker-tmp',
  ],
  thresholds: { high: 90, low: 85, break: null },
}
