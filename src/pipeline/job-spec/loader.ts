import { readFile } from 'node:fs/promises'
import { basename } from 'node:path'
import { parse as parseToml, TomlError } from 'smol-toml'
import { COMMON_ATTRIBUTES, type TaskDefinition } from '../task.ts'
import { TASK_TYPES } from '../tasks/index.ts'
import { REFUSED_TASK_TYPES } from '../tasks/refused.ts'
import { parseDuration } from '../duration.ts'
import { attributeProblem, parseBoolText } from '../literals.ts'
import { referencedKeypaths, replaceVariables, wholeVarExpression } from '../vars.ts'
import { RUN_VARIABLES, runVariableProblem } from './run-variables.ts'
import { parseObservationSource, type DotTask } from './dot.ts'
import { topologicalOrder } from './graph.ts'
import { deriveExternalJobID } from './external-job-id.ts'
import { checkFields, keyLine } from './fields.ts'
import { SpecError, type SpecProblem } from './problems.ts'
import type { PipelineTask } from './schema.ts'
import { JOB_TYPES, type JobSpec, type JobSpecFields, type JobType } from './job-types.ts'

export type { PipelineTask } from './schema.ts'

/** A validated job: the spec's fields and its tasks in a topological order. */
export interface Job {
  file: string
  spec: JobSpec
  /** The spec gives no externalJobID: spec.externalJobID was derived from its name and file name. */
  externalJobIDDerived: boolean
  /** Topological order; ties keep the order of declaration. */
  tasks: PipelineTask[]
  /** Tasks nothing depends on, by `index`: their outputs are the run's final outputs. */
  terminal: string[]
}

const VARIABLE_ROOTS = new Set(Object.keys(RUN_VARIABLES))
/** Task ids become variable names: they may not shadow the run's own variables or object internals. */
const RESERVED_TASK_IDS = new Set([...VARIABLE_ROOTS, '__proto__', 'constructor', 'prototype'])
/** Limits against hostile or accidental giant specs. */
const MAX_SPEC_CHARS = 1_000_000
const MAX_TASKS = 500

/** Reads and validates a spec file; all problems, never only the first. */
export async function loadJobSpecFile(
  file: string,
): Promise<{ job?: Job; problems: SpecProblem[] }> {
  let text: string
  try {
    text = await readFile(file, 'utf8')
  } catch (error) {
    return { problems: [{ file, message: `cannot read: ${(error as Error).message}` }] }
  }
  return loadJobSpec(text, file)
}

/** The job, or a SpecError with every problem. */
export async function parseJobSpecFile(file: string): Promise<Job> {
  const { job, problems } = await loadJobSpecFile(file)
  if (!job || problems.length > 0) throw new SpecError(problems)
  return job
}

export function loadJobSpec(text: string, file: string): { job?: Job; problems: SpecProblem[] } {
  try {
    return loadJobSpecUnguarded(text, file)
  } catch (error) {
    // A spec no check foresaw must still come back as a problem of that file, not a crash of the process.
    return { problems: [{ file, message: `cannot be loaded: ${(error as Error).message}` }] }
  }
}

function loadJobSpecUnguarded(text: string, file: string): { job?: Job; problems: SpecProblem[] } {
  const problems: SpecProblem[] = []
  if (text.length > MAX_SPEC_CHARS)
    return {
      problems: [
        { file, message: `the spec is ${text.length} characters, more than ${MAX_SPEC_CHARS}` },
      ],
    }
  let document: Record<string, unknown>
  try {
    document = parseToml(text) as Record<string, unknown>
  } catch (error) {
    const line = error instanceof TomlError ? error.line : undefined
    return {
      problems: [
        { file, line, message: `not valid TOML: ${(error as Error).message.split('\n')[0]}` },
      ],
    }
  }
  const { fields, problems: fieldProblems } = checkFields(document, text, file)
  problems.push(...fieldProblems)
  const source = document.observationSource
  // Tasks are checked against the variables of the type's runs; a spec of no known type is refused already.
  const jobType = fieldProblems[0]?.jobType ?? fields?.type
  if (typeof source !== 'string' || jobType === undefined) return { problems }
  const first = problems.length
  const tasks = buildTasks(source, observationSourceLine(text), file, jobType as JobType, problems)
  for (const problem of problems.slice(first)) problem.jobType = jobType
  if (!fields || problems.length > 0 || tasks === undefined) return { problems }
  const check = JOB_TYPES[fields.type].check as
    | ((
        fields: JobSpecFields,
        pipeline: typeof tasks & { tasks: PipelineTask[] },
      ) => Array<{ field: string; message: string }>)
    | undefined
  for (const problem of check?.(fields, { ...tasks, tasks: tasks.ordered }) ?? [])
    problems.push({ file, line: keyLine(text, problem.field), jobType: fields.type, ...problem })
  if (problems.length > 0) return { problems }
  const externalJobIDDerived = fields.externalJobID === undefined
  // Chainlink's name is optional; a job without one is named by its file, as its runs are shown.
  const name = fields.name ?? basename(file).replace(/\.toml$/, '')
  const spec = {
    ...fields,
    name,
    externalJobID: fields.externalJobID ?? deriveExternalJobID(name, file),
  } as JobSpec
  return {
    job: { file, spec, externalJobIDDerived, tasks: tasks.ordered, terminal: tasks.terminal },
    problems,
  }
}

/** The pipeline's tasks; its problems also name their line inside observationSource. */
function buildTasks(
  source: string,
  lineOffset: number,
  file: string,
  jobType: JobType,
  problems: SpecProblem[],
): { ordered: PipelineTask[]; terminal: string[] } | undefined {
  const first = problems.length
  const built = buildTaskGraph(source, lineOffset, file, jobType, problems)
  for (const problem of problems.slice(first))
    if (problem.line !== undefined && problem.line >= lineOffset)
      problem.sourceLine = problem.line - lineOffset + 1
  return built
}

function buildTaskGraph(
  source: string,
  lineOffset: number,
  file: string,
  jobType: JobType,
  problems: SpecProblem[],
): { ordered: PipelineTask[]; terminal: string[] } | undefined {
  const parsed = parseObservationSource(source, lineOffset)
  if (!parsed.ok) {
    problems.push({ file, line: parsed.line, message: parsed.message })
    return undefined
  }
  for (const item of parsed.unsupported)
    problems.push({ file, line: item.line, message: item.message })
  if (parsed.tasks.length === 0)
    problems.push({ file, line: lineOffset, message: 'observationSource has no tasks' })
  if (parsed.tasks.length > MAX_TASKS) {
    problems.push({
      file,
      line: lineOffset,
      message: `observationSource has ${parsed.tasks.length} tasks, more than ${MAX_TASKS}`,
    })
    return undefined
  }
  const ids = new Set(parsed.tasks.map((task) => task.id))
  const tasks = new Map<string, PipelineTask>()
  for (const dotTask of parsed.tasks) {
    const checked = checkTask(dotTask, ids, file, jobType, problems)
    tasks.set(dotTask.id, checked)
  }
  for (const edge of parsed.edges) {
    const target = tasks.get(edge.to)!
    if (edge.from === edge.to)
      problems.push({
        file,
        line: edge.line,
        task: edge.from,
        message: 'an edge from the task to itself',
      })
    if (target.inputs.includes(edge.from))
      problems.push({
        file,
        line: edge.line,
        task: edge.to,
        message: `edge ${edge.from} -> ${edge.to} is given twice`,
      })
    target.inputs.push(edge.from)
    if (!target.dependsOn.includes(edge.from)) target.dependsOn.push(edge.from)
  }
  const ordered = topologicalOrder([...tasks.values()], file, problems)
  if (!ordered) return undefined
  const hasSuccessor = new Set(ordered.flatMap((task) => task.dependsOn))
  const terminal = ordered
    .filter((task) => !hasSuccessor.has(task.id))
    .sort((a, b) => a.index - b.index)
    .map((task) => task.id)
  return { ordered, terminal }
}

function checkTask(
  dotTask: DotTask,
  ids: ReadonlySet<string>,
  file: string,
  jobType: JobType,
  problems: SpecProblem[],
): PipelineTask {
  const report = (message: string, line = dotTask.line): void => {
    problems.push({ file, line, task: dotTask.id, message })
  }
  // Task types are case-insensitive, as on a node (`type=JSONParse`).
  const type = dotTask.attributes.type?.trim().toLowerCase()
  const definition = type === undefined ? undefined : TASK_TYPES.get(type)
  if (RESERVED_TASK_IDS.has(dotTask.id))
    report(`the task id ${dotTask.id} is reserved (${[...RESERVED_TASK_IDS].join(', ')})`)
  if (!dotTask.declared)
    report(
      `is named in an edge but never declared: declare it (${dotTask.id} [type="..."]) or remove the edge`,
    )
  else if (type === undefined)
    report('has no type attribute: every task needs one, such as type="http" or type="jsonparse"')
  else if (!definition && Object.hasOwn(REFUSED_TASK_TYPES, type))
    report(`task type ${type} is not supported: ${REFUSED_TASK_TYPES[type]}`)
  else if (!definition)
    report(
      `unknown task type ${JSON.stringify(type)} (known: ${[...TASK_TYPES.keys()].join(', ')})`,
    )
  for (const name of dotTask.duplicateAttributes)
    report(`attribute ${name} is given twice`, dotTask.attributeLines[name])
  if (definition) canonicaliseAttributeNames(dotTask, definition)
  if (definition) checkAttributes(dotTask, definition, report)
  checkCommonAttributes(dotTask, report)
  const dependsOn: string[] = []
  for (const [name, value] of Object.entries(dotTask.attributes)) {
    for (const keypath of keypathsOf(value)) {
      const [root = ''] = keypath.split('.')
      if (VARIABLE_ROOTS.has(root)) {
        const problem = runVariableProblem(keypath, jobType)
        if (problem)
          report(`${name} refers to $(${keypath}), but ${problem}`, dotTask.attributeLines[name])
        continue
      }
      if (root === dotTask.id)
        report(
          `${name} refers to the task's own output $(${keypath})`,
          dotTask.attributeLines[name],
        )
      else if (!ids.has(root))
        report(
          `${name} refers to $(${keypath}), but there is no task ${root}`,
          dotTask.attributeLines[name],
        )
      else if (!dependsOn.includes(root)) dependsOn.push(root)
    }
  }
  const index = Number(dotTask.attributes.index ?? '0')
  return {
    id: dotTask.id,
    type: type ?? '',
    attributes: dotTask.attributes,
    line: dotTask.line,
    inputs: [],
    dependsOn,
    index: Number.isInteger(index) ? index : 0,
  }
}

/**
 * Chainlink maps attributes onto task fields case-insensitively (its own docs write
 * `allowunrestrictednetworkaccess`), so names are matched the same way and stored in their canonical spelling.
 */
function canonicaliseAttributeNames(dotTask: DotTask, definition: TaskDefinition): void {
  const canonical = new Map(
    [...COMMON_ATTRIBUTES, ...definition.attributes].map((name) => [name.toLowerCase(), name]),
  )
  for (const name of Object.keys(dotTask.attributes)) {
    const proper = canonical.get(name.toLowerCase())
    if (proper === undefined || proper === name || Object.hasOwn(dotTask.attributes, proper))
      continue
    dotTask.attributes[proper] = dotTask.attributes[name]!
    dotTask.attributeLines[proper] = dotTask.attributeLines[name]!
    delete dotTask.attributes[name]
    delete dotTask.attributeLines[name]
  }
}

function checkAttributes(
  dotTask: DotTask,
  definition: TaskDefinition,
  report: (message: string, line?: number) => void,
): void {
  for (const name of definition.jsonAttributes ?? []) {
    const text = dotTask.attributes[name]
    if (text === undefined || text.trim() === '' || wholeVarExpression(text) !== undefined) continue
    const problem = jsonProblem(text)
    if (problem) report(`${name} is not valid JSON: ${problem}`, dotTask.attributeLines[name])
  }
  for (const [name, kind] of Object.entries(definition.kinds ?? {})) {
    const text = dotTask.attributes[name]
    const problem = text === undefined ? undefined : attributeProblem(kind, text)
    if (problem) report(`${name} ${problem}`, dotTask.attributeLines[name])
  }
  for (const problem of definition.check?.(dotTask.attributes) ?? [])
    report(`${problem.attribute}: ${problem.message}`, dotTask.attributeLines[problem.attribute])
  const known = new Set<string>([...COMMON_ATTRIBUTES, ...definition.attributes])
  for (const name of Object.keys(dotTask.attributes)) {
    if (!known.has(name))
      report(
        `unknown attribute ${name} for ${definition.type} (known: ${definition.attributes.join(', ') || 'none'}): feedrunner refuses what it does not implement, where a Chainlink node ignores it without a word`,
        dotTask.attributeLines[name],
      )
  }
  for (const name of definition.required ?? []) {
    if ((dotTask.attributes[name] ?? '').trim() === '')
      report(`${definition.type} needs the attribute ${name}`)
  }
}

function checkCommonAttributes(
  dotTask: DotTask,
  report: (message: string, line?: number) => void,
): void {
  const attributes = dotTask.attributes
  for (const name of ['timeout', 'minBackoff', 'maxBackoff'] as const) {
    const value = attributes[name]
    if (value !== undefined && parseDuration(value) === undefined)
      report(
        `${name} must be a duration such as "10s", got ${JSON.stringify(value)}`,
        dotTask.attributeLines[name],
      )
  }
  for (const name of ['retries', 'index'] as const) {
    const value = attributes[name]
    if (value !== undefined && !/^\d+$/.test(value.trim()))
      report(
        `${name} must be a non-negative integer, got ${JSON.stringify(value)}`,
        dotTask.attributeLines[name],
      )
  }
  const failEarly = attributes.failEarly
  if (failEarly === undefined) return
  const early = parseBoolText(failEarly.trim())
  if (early === undefined)
    report(
      `failEarly must be true or false, got ${JSON.stringify(failEarly)}`,
      dotTask.attributeLines.failEarly,
    )
  // Chainlink reads it as Go's ParseBool does; the executor reads the canonical word.
  else attributes.failEarly = String(early)
}

/**
 * The keypaths an attribute refers to: each `$(...)` in it, and the whole text's when it is one
 * variable, which a run reads even when it names a quoted task id (`$(price-usd)`) that a `$(...)`
 * inside a text cannot.
 */
function keypathsOf(text: string): string[] {
  const keypaths = referencedKeypaths(text)
  const whole = wholeVarExpression(text)
  return whole === undefined || keypaths.includes(whole) ? keypaths : [...keypaths, whole]
}

/** JSON attributes are checked with every `$(...)` standing for null, as the executor will parse them. */
function jsonProblem(text: string): string | undefined {
  try {
    JSON.parse(replaceVariables(text, () => 'null'))
    return undefined
  } catch (error) {
    return (error as Error).message
  }
}

/** The TOML line holding the first line of the DOT text. */
function observationSourceLine(text: string): number {
  const lines = text.split('\n')
  const index = lines.findIndex((line) => /^\s*observationSource\s*=/.test(line))
  if (index === -1) return 1
  const rest = (lines[index] ?? '').replace(/^\s*observationSource\s*=\s*/, '')
  const multiLineStart = rest.startsWith('"""') || rest.startsWith("'''")
  // TOML drops a newline right after the opening delimiter, so the DOT text starts on the next line;
  // anything else after it (spaces too) is the text's first line.
  return multiLineStart && rest.slice(3).replace(/\r$/, '') === '' ? index + 2 : index + 1
}
