import { JOB_TYPES, type JobType } from './job-types.ts'

/**
 * The roots of a run's own variables. Which of their members a run has depends on its job type
 * (`JOB_TYPES[type].variables`, as Chainlink's delegate of that type gives them), checked when a
 * spec is loaded: a variable a run cannot give is refused there, not found missing by every live
 * run. `jobSpec.contractAddress` and `jobSpec.gasLimit` are feedrunner's; Chainlink's
 * `jobSpec.pipelineSpec` (a Go struct the node's ethtx reads) is not given and is refused by name.
 */
export const RUN_VARIABLES: Readonly<Record<string, true>> = { jobSpec: true, jobRun: true }

/**
 * Why a run of `type` has no variable at `keypath` (rooted at jobSpec or jobRun), or undefined when
 * it has. Below `jobRun.meta` only what the type's runs put there is known.
 */
export function runVariableProblem(keypath: string, type: JobType): string | undefined {
  const [root = '', member = '', ...rest] = keypath.split('.')
  const definition = JOB_TYPES[type]
  const variables = definition.variables as Readonly<Record<string, readonly string[]>>
  const known = variables[root] ?? []
  const article = /^[aeiou]/.test(type) ? 'an' : 'a'
  if (!known.includes(member))
    return `${article} ${type} run has no ${root}.${member} (it has ${known.map((key) => `${root}.${key}`).join(', ')})`
  // Every jobSpec variable is one value (a text or a number): a run has nothing below it.
  if (root === 'jobSpec' && rest.length > 0)
    return `${article} ${type} run's ${root}.${member} is a single value, with nothing below it`
  if (root !== 'jobRun' || member !== 'meta' || rest.length === 0) return undefined
  const meta = 'meta' in definition ? definition.meta : undefined
  if (!meta) return `${article} ${type} run's jobRun.meta holds nothing below it`
  const [group, field, ...deeper] = rest
  const fields = meta.fields.map((name) => `jobRun.meta.${meta.group}.${name}`)
  if (
    group !== meta.group ||
    (field !== undefined && !meta.fields.includes(field)) ||
    deeper.length > 0
  )
    return `${article} ${type} run's jobRun.meta holds only ${meta.group} (${fields.join(', ')})`
  return undefined
}
