import type { Job, SpecProblem } from '../pipeline/index.ts'

/**
 * `jobs validate --json`: every spec, valid or with its problems, as one JSON document alone on
 * stdout (a program reads it); exit code 1 when one is not valid.
 */
export async function validateJson(files: readonly string[]): Promise<number> {
  const { duplicateJobIdProblems, loadJobSpecFile } = await import('../pipeline/index.ts')
  const loaded: Array<{ file: string; job?: Job; problems: SpecProblem[] }> = []
  for (const file of files) {
    const { job, problems } = await loadJobSpecFile(file)
    loaded.push({ file, ...(job && problems.length === 0 ? { job } : {}), problems })
  }
  const duplicates = duplicateJobIdProblems(loaded.flatMap(({ job }) => (job ? [job] : [])))
  for (const problem of duplicates)
    loaded.find((spec) => spec.file === problem.file)?.problems.push(problem)
  const specs = loaded.map(({ file, job, problems }) => ({
    file,
    valid: problems.length === 0 && job !== undefined,
    ...(job
      ? {
          name: job.spec.name,
          externalJobID: job.spec.externalJobID,
          externalJobIDDerived: job.externalJobIDDerived,
          evmChainID: job.spec.evmChainID === undefined ? null : String(job.spec.evmChainID),
          type: job.spec.type,
          contractAddress: job.spec.type === 'directrequest' ? job.spec.contractAddress : null,
          tasks: job.tasks.length,
        }
      : {}),
    problems: problems.map((problem) => ({
      line: problem.line ?? null,
      sourceLine: problem.sourceLine ?? null,
      field: problem.field ?? null,
      task: problem.task ?? null,
      message: problem.message,
    })),
  }))
  const valid = specs.filter((spec) => spec.valid).length
  console.log(JSON.stringify({ valid, total: specs.length, specs }, null, 2))
  return specs.length > 0 && valid === specs.length ? 0 : 1
}
