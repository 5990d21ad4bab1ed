import type { Job } from './loader.ts'
import type { SpecProblem } from './problems.ts'

/**
 * Two specs with one externalJobID: a request names its job by that id alone, so it could not tell
 * them apart. Each problem is on the later file and names the earlier one.
 */
export function duplicateJobIdProblems(jobs: readonly Job[]): SpecProblem[] {
  const first = new Map<string, Job>()
  const problems: SpecProblem[] = []
  for (const job of jobs) {
    const id = job.spec.externalJobID.toLowerCase()
    const twin = first.get(id)
    if (!twin) {
      first.set(id, job)
      continue
    }
    const how = job.externalJobIDDerived
      ? ` (derived from its name ${JSON.stringify(job.spec.name)} and file name: give it another name or an externalJobID)`
      : ': give one of them another externalJobID'
    problems.push({
      file: job.file,
      field: 'externalJobID',
      message: `externalJobID ${id} is also the id of ${twin.file}; a request names its job by this id alone, so the two cannot both be served${how}`,
    })
  }
  return problems
}
