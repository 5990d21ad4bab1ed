import { describe, expect, it } from 'vitest'
import {
  formatProblem,
  loadJobSpec,
  loadJobSpecFile,
  type SpecProblem,
} from '../../src/pipeline/index.ts'

const dir = 'test/pipeline/specs/broken'

async function problemsOf(name: string): Promise<SpecProblem[]> {
  const { job, problems } = await loadJobSpecFile(`${dir}/${name}`)
  expect(job).toBeUndefined()
  for (const problem of problems) expect(problem.file).toBe(`${dir}/${name}`)
  return problems
}

describe('loader: every problem names the file, the line and the task', () => {
  it.each([
    ['unknown-type.toml', 10, 'weird', 'unknown task type "frobnicate"'],
    ['unknown-attribute.toml', 8, 'fetch', 'unknown attribute colour for bridge'],
    [
      'missing-task.toml',
      12,
      'encode',
      'data refers to $(multiply), but there is no task multiply',
    ],
    ['cycle.toml', 9, 'b', 'tasks form a cycle: b -> c -> b'],
  ])('%s', async (file, line, task, message) => {
    const problems = await problemsOf(file)
    expect(problems).toHaveLength(1)
    expect(problems[0]).toMatchObject({ line, task })
    expect(problems[0]!.message).toContain(message)
    expect(formatProblem(problems[0]!)).toMatch(
      new RegExp(`^${dir}/${file}:${line} \\(observationSource line \\d+\\): task ${task}: `),
    )
  })

  it('reports each missing required attribute on its task', async () => {
    const problems = await problemsOf('missing-attribute.toml')
    expect(problems.map((problem) => [problem.line, problem.task, problem.message])).toEqual([
      [8, 'fetch', 'bridge needs the attribute name'],
      [9, 'tx', 'ethtx needs the attribute to'],
    ])
  })

  it('reports bad UUID and addresses on their TOML lines', async () => {
    const problems = await problemsOf('bad-fields.toml')
    expect(problems.map((problem) => [problem.line, problem.message.split(' ')[0]])).toEqual([
      [4, 'externalJobID'],
      [5, 'contractAddress'],
      [7, 'requesters[0]'],
    ])
    expect(problems[1]!.message).toContain('EIP-55')
  })

  it('collects every problem of a spec, not only the first', async () => {
    const problems = await problemsOf('many-problems.toml')
    expect(problems.map((problem) => [problem.line, problem.task ?? null])).toEqual([
      [2, null],
      [7, null],
      [9, 'fetch'],
      [10, 'parse'],
      [11, 'ghost'],
    ])
    expect(problems.map((problem) => problem.message).join('\n')).toMatch(
      /schemaVersion must be 1[\s\S]*maxTaskDuration[\s\S]*timeout must be a duration[\s\S]*retries must be a non-negative integer[\s\S]*ghost|never declared/,
    )
  })

  it('points at the line of a DOT syntax error', async () => {
    const problems = await problemsOf('bad-dot.toml')
    expect(problems).toHaveLength(1)
    expect(problems[0]).toMatchObject({ line: 10 })
    expect(problems[0]!.message).toContain('observationSource is not valid DOT')
  })

  it('checks JSON attributes and ABIs at load time', async () => {
    const problems = await problemsOf('bad-json-abi.toml')
    expect(
      problems.map((problem) => [problem.line, problem.task, problem.message.split(':')[0]]),
    ).toEqual([
      [8, 'fetch', 'requestData is not valid JSON'],
      [9, 'encode', 'abi'],
    ])
  })

  it('reports TOML syntax errors with their line, and unknown fields', () => {
    const broken = loadJobSpec('type = "directrequest"\nname = \n', 'x.toml')
    expect(broken.problems).toEqual([expect.objectContaining({ file: 'x.toml', line: 2 })])
    const extra = loadJobSpec('type = "directrequest"\ncolour = "blue"\n', 'y.toml')
    expect(
      extra.problems.find((problem) => problem.message.includes('unknown field colour')),
    ).toMatchObject({ line: 2 })
    expect(
      extra.problems.find((problem) => problem.message.startsWith('contractAddress'))?.message,
    ).toBe(
      'contractAddress is required in a directrequest spec: the Operator contract whose OracleRequest logs this job answers',
    )
  })
})

describe('loader: a valid spec', () => {
  it('builds the DAG with ordered inputs, implicit dependencies and terminal tasks by index', () => {
    const { job, problems } = loadJobSpec(
      `type = "directrequest"
schemaVersion = 1
name = "dag"
externalJobID = "0EEC7E1DD0D2476CA1A872DFB6633F46"
contractAddress = "0xe7f1725E7734CE288F8367e1Bb143E90bb3F0512"
evmChainID = 31337
observationSource = """
    b [type="multiply" times="2" input="3"]
    a [type="multiply" times="1" input="5"]
    m [type="median" index="1"]
    late [type="multiply" times="$(a)" input="1" index="0"]
    b -> m
    a -> m
"""
`,
      'dag.toml',
    )
    expect(problems).toEqual([])
    expect(job!.spec.externalJobID).toBe('0eec7e1d-d0d2-476c-a1a8-72dfb6633f46')
    expect(job!.spec.evmChainID).toBe(31337n)
    const m = job!.tasks.find((task) => task.id === 'm')!
    expect(m.inputs).toEqual(['b', 'a'])
    const late = job!.tasks.find((task) => task.id === 'late')!
    expect(late.inputs).toEqual([])
    expect(late.dependsOn).toEqual(['a'])
    expect(job!.tasks.map((task) => task.id).indexOf('a')).toBeLessThan(
      job!.tasks.map((task) => task.id).indexOf('late'),
    )
    expect(job!.terminal).toEqual(['late', 'm'])
  })
})
