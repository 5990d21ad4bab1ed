/**
 * True inside `npm run mutation` (bin/mutation.ts). StrykerJS switches a mutant on in the test's own
 * process; a process the test spawns runs the code unmutated, so such a test cannot kill a mutant and
 * only costs time there: it skips itself.
 */
export const inMutationRun = process.env.FEEDRUNNER_MUTATION_FOLDER !== undefined
