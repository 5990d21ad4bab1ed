import { describe, expect, it } from 'vitest'
import {
  formatProblem,
  loadJobSpec,
  loadJobSpecFile,
  parseJobSpecFile,
  SpecError,
  type SpecProblem,
} from '../../src/pipeline/index.ts'

// The loader's edges: limits, where a problem is placed, and how a task's words are read. Each spec
// is a cron job whose DOT text starts on TOML line 6, broken or stretched in one place.

const HEAD = `type = "cron"
schemaVersion = 1
name = "edges"
schedule = "@every 1m"
`

function cron(source: string, head = HEAD): string {
  return `${head}observationSource = """
${source}
"""
`
}

function load(text: string, file = 'jobs/edges.toml') {
  return loadJobSpec(text, file)
}

function problemsOf(source: string, head = HEAD): SpecProblem[] {
  const { job, problems } = load(cron(source, head))
  expect(job).toBeUndefined()
  return problems
}

/** The one problem that says `words`, with where it is. */
function problemSaying(problems: SpecProblem[], words: string): SpecProblem {
  const found = problems.find((problem) => problem.message.includes(words))
  expect(
    found,
    `no problem says "${words}": ${problems.map(formatProblem).join('\n')}`,
  ).toBeDefined()
  return found!
}

describe('loader: limits on a spec', () => {
  it('refuses a spec over a million characters, saying its length, and takes one of exactly a million', () => {
    const valid = cron('  a [type="multiply" input="2" times="3"]')
    const filler = (chars: number) => `${valid}#${'x'.repeat(chars - valid.length - 2)}\n`
    const exact = filler(1_000_000)
    expect(exact).toHaveLength(1_000_000)
    expect(load(exact).problems).toEqual([])
    const over = filler(1_000_001)
    expect(load(over)).toEqual({
      problems: [
        {
          file: 'jobs/edges.toml',
          message: 'the spec is 1000001 characters, more than 1000000',
        },
      ],
    })
  })

  it('takes 500 tasks and refuses 501, saying how many', () => {
    const tasks = (count: number) =>
      Array.from({ length: count }, (_, i) => `  t${i} [type="multiply" input="1" times="1"]`)
    const { job } = load(cron(tasks(500).join('\n')))
    expect(job!.tasks).toHaveLength(500)
    const problems = problemsOf(tasks(501).join('\n'))
    expect(problems).toEqual([
      {
        file: 'jobs/edges.toml',
        line: 6,
        sourceLine: 1,
        jobType: 'cron',
        message: 'observationSource has 501 tasks, more than 500',
      },
    ])
  })

  it('refuses a pipeline without tasks on its first line', () => {
    const problems = problemsOf('  // nothing yet')
    expect(problems).toEqual([
      expect.objectContaining({
        line: 6,
        sourceLine: 1,
        message: 'observationSource has no tasks',
      }),
    ])
  })
})

describe('loader: a TOML syntax error', () => {
  it('gives the first line of the parser message, on its line', () => {
    const { problems } = load(`type = "cron"\nschemaVersion = 1\nname = \n`)
    expect(problems).toHaveLength(1)
    expect(problems[0]).toMatchObject({ file: 'jobs/edges.toml', line: 3 })
    expect(problems[0]!.message).toBe('not valid TOML: Invalid TOML document: invalid value')
    expect(problems[0]!.message).not.toContain('\n')
  })
})

describe('loader: where the pipeline starts', () => {
  it('on the next line after """ or \'\'\' alone, on the same line when the DOT text starts there', () => {
    const bad = 'a [type="frobnicate"]'
    const at = (text: string) => problemSaying(load(text).problems, 'unknown task type')
    const base = `${HEAD}observationSource = `
    expect(at(`${base}"""\n${bad}\n"""\n`)).toMatchObject({ line: 6, sourceLine: 1 })
    expect(at(`${base}'''\n\n${bad}\n'''\n`)).toMatchObject({ line: 7, sourceLine: 2 })
    expect(at(`${base}"""${bad}\n"""\n`)).toMatchObject({ line: 5, sourceLine: 1 })
    expect(at(`${base}'''  ${bad}\n'''\n`)).toMatchObject({ line: 5, sourceLine: 1 })
    // Spaces after the delimiter are the DOT text's first line: TOML drops only a newline there.
    expect(at(`${base}"""   \n${bad}\n"""\n`)).toMatchObject({ line: 6, sourceLine: 2 })
    expect(at(`${base}"""\r\n${bad}\r\n"""\r\n`)).toMatchObject({ line: 6, sourceLine: 1 })
    expect(at(`${base}"${bad.replaceAll('"', '\\"')}"\n`)).toMatchObject({ line: 5, sourceLine: 1 })
    expect(at(`#observationSource = below\n${base}"""\n${bad}\n"""\n`)).toMatchObject({
      line: 7,
      sourceLine: 1,
    })
    expect(at(`  observationSource="""\n${bad}\n"""\n${HEAD}`)).toMatchObject({
      line: 2,
      sourceLine: 1,
    })
  })

  it('places an empty one-line pipeline on its own line', () => {
    const problems = load(`${HEAD}observationSource = ""\n`).problems
    expect(problemSaying(problems, 'has no tasks')).toMatchObject({ line: 5, sourceLine: 1 })
  })

  it('gives no observationSource line to a field written after the pipeline', () => {
    const text =
      cron('  a [type="any"]', HEAD.replace('schedule = "@every 1m"\n', '')) +
      'schedule = "whenever"\n'
    const problems = load(text).problems
    expect(problems).toEqual([expect.objectContaining({ field: 'schedule', line: 7 })])
    expect(problems[0]!.sourceLine).toBeUndefined()
  })

  it('counts from line 1 when it cannot find the line (a quoted key)', () => {
    const text = `${HEAD}"observationSource" = """\n\na [type="frobnicate"]\n"""\n`
    expect(problemSaying(load(text).problems, 'unknown task type')).toMatchObject({
      line: 2,
      sourceLine: 2,
    })
  })
})

// Pipelines with one problem each: where it is reported, and the words its message starts with.
const ONE_PROBLEM: Array<[name: string, source: string, at: Partial<SpecProblem>, says: string]> = [
  [
    'a subgraph in an edge',
    '  a [type="any"]\n  b [type="any"]\n  a -> {b}',
    {},
    'subgraphs are not supported in edges',
  ],
  [
    'an edge given twice',
    '  a [type="any"]\n  b [type="median"]\n  a -> b\n  a -> b',
    { task: 'b', line: 8, sourceLine: 3 },
    'edge a -> b is given twice',
  ],
  [
    'a refused task type',
    '  v [type="VRF"]',
    { task: 'v', line: 6 },
    "task type vrf is not supported: a VRF job's task (it needs the node's VRF keys); not for directrequest jobs",
  ],
  [
    'a reserved task id',
    '  prototype [type="any"]',
    { task: 'prototype' },
    'the task id prototype is reserved (jobSpec, jobRun, __proto__, constructor, prototype)',
  ],
  [
    'a task reading its own output',
    '  a [type="multiply"\n     input="$(a.value)" times="2"]',
    { task: 'a', line: 7 },
    "input refers to the task's own output $(a.value)",
  ],
  [
    'an attribute of a type that takes none',
    '  a [type="any"\n     colour="red"]',
    { task: 'a', line: 7 },
    'unknown attribute colour for any (known: none): feedrunner refuses what it does not implement, where a Chainlink node ignores it without a word',
  ],
  [
    'a required attribute of spaces',
    '  b [type="bridge"\n     name="  "]',
    { task: 'b', line: 6 },
    'bridge needs the attribute name',
  ],
  [
    'a count with letters',
    '  a [type="uppercase" input="x" retries="2x"]',
    { task: 'a' },
    'retries must be a non-negative integer, got "2x"',
  ],
]

describe('loader: edges and tasks', () => {
  it.each(ONE_PROBLEM)('%s', (_name, source, at, says) => {
    const problems = problemsOf(source)
    expect(problems.map(formatProblem)).toHaveLength(1)
    expect(problems[0]).toMatchObject({ file: 'jobs/edges.toml', jobType: 'cron', ...at })
    expect(problems[0]!.message.slice(0, says.length)).toBe(says)
  })

  it('refuses subgraph statements', () => {
    expect(problemsOf('  subgraph s { a [type="any"] }').map((problem) => problem.message)).toEqual(
      [
        'subgraph statements are not supported in observationSource',
        'observationSource has no tasks',
      ],
    )
  })

  it('reads task types in any case and with spaces around them', () => {
    const { job, problems } = load(cron('  a [type=" MultiPLY " input="2" times="3"]'))
    expect(problems).toEqual([])
    expect(job!.tasks[0]).toMatchObject({ id: 'a', type: 'multiply', line: 6 })
  })

  it('lists every known task type for an unknown one', () => {
    const problem = problemSaying(problemsOf('  a [type="frobnicate"]'), 'unknown task type')
    expect(problem.message).toMatch(/^unknown task type "frobnicate" \(known: \w+(, \w+)+\)$/)
    expect(problem.message).toContain(', jsonparse, ')
  })

  it('counts each task depended on once, and ranks terminal tasks by index', () => {
    const { job, problems } = load(
      cron(`  a [type="multiply" input="2" times="1"]
  b [type="multiply" input="$(a)" times="$(a)" index="2"]
  c [type="multiply" times="$(a)" index="1"]
  d [type="multiply" input="$(jobSpec.name)" times="1"]
  a -> c`),
    )
    expect(problems).toEqual([])
    expect(job!.tasks.map((task) => [task.id, task.inputs, task.dependsOn, task.index])).toEqual([
      ['a', [], [], 0],
      ['b', [], ['a'], 2],
      ['c', ['a'], ['a'], 1],
      ['d', [], [], 0],
    ])
    expect(job!.terminal).toEqual(['d', 'c', 'b'])
  })
})

describe("loader: a task's attributes", () => {
  it('matches attribute names in any case and stores them spelled as the task type spells them', () => {
    const { job, problems } = load(
      cron(`  h [type="http" method="GET" url="http://127.0.0.1:1/"
     ALLOWUNRESTRICTEDNETWORKACCESS="true" TimeOut="5s"]`),
    )
    expect(problems).toEqual([])
    expect(job!.tasks[0]!.attributes).toEqual({
      type: 'http',
      method: 'GET',
      url: 'http://127.0.0.1:1/',
      allowUnrestrictedNetworkAccess: 'true',
      timeout: '5s',
    })
  })

  it('checks JSON attributes with every $(...) as null, and skips empty ones and whole variables', () => {
    const bridge = (requestData: string) =>
      load(
        cron(`  a [type="multiply" input="1" times="1"]
  b [type="bridge" name="feed"
     requestData="${requestData}"]
  a -> b`),
      ).problems
    expect(bridge('')).toEqual([])
    expect(bridge('  ')).toEqual([])
    expect(bridge('$(a)')).toEqual([])
    expect(bridge(' $( a ) ')).toEqual([])
    expect(bridge('{\\\\"q\\\\": $(a), \\\\"r\\\\": [$(a.b_2), $(jobSpec.name)]}')).toEqual([])
    const problems = bridge('{\\\\"q\\\\": $(a) $(a)}')
    expect(problems).toHaveLength(1)
    expect(problems[0]).toMatchObject({ task: 'b', line: 8, sourceLine: 3 })
    expect(problems[0]!.message).toMatch(/^requestData is not valid JSON: \S/)
  })

  it('checks the durations, counts and failEarly every task takes, each on its line', () => {
    const problems = problemsOf(`  a [type="uppercase" input="x"
     minBackoff="soon"
     maxBackoff="later"
     index="-1"
     failEarly="yes"]`)
    expect(problems.map((problem) => [problem.line, problem.message])).toEqual([
      [7, 'minBackoff must be a duration such as "10s", got "soon"'],
      [8, 'maxBackoff must be a duration such as "10s", got "later"'],
      [9, 'index must be a non-negative integer, got "-1"'],
      [10, 'failEarly must be true or false, got "yes"'],
    ])
  })

  it('takes counts with spaces around them and reads failEarly as Go does, keeping the canonical word', () => {
    const { job, problems } = load(
      cron(`  a [type="uppercase" input="x" retries=" 12 " index=" 10 " failEarly=" 1 "]
  b [type="uppercase" input="y" failEarly="F"]`),
    )
    expect(problems).toEqual([])
    const [a, b] = job!.tasks
    expect([a!.attributes.failEarly, a!.index, b!.attributes.failEarly]).toEqual([
      'true',
      10,
      'false',
    ])
  })
})

describe('loader: the job', () => {
  it('is named by its file when the spec gives no name', () => {
    const head = HEAD.replace('name = "edges"\n', '')
    const { job } = load(cron('  a [type="any"]', head), 'jobs/price.tomlfeed.toml')
    expect(job!.spec.name).toBe('price.tomlfeed')
    expect(job!.externalJobIDDerived).toBe(true)
  })

  it('still checks the pipeline of a spec whose fields are refused, as its job type', () => {
    const head = HEAD.replace('schedule = "@every 1m"', 'schedule = "whenever"')
    const problems = problemsOf('  a [type="uppercase" input="$(jobRun.logData)"]', head)
    expect(problems.map((problem) => [problem.line, problem.jobType])).toEqual([
      [4, 'cron'],
      [6, 'cron'],
    ])
    expect(problems[1]!.message).toMatch(/^input refers to \$\(jobRun\.logData\), but a cron run/)
  })
})

const FLUX = `type = "fluxmonitor"
schemaVersion = 1
name = "flux"
contractAddress = "0x3cCad4715152693fE3BC4460591e3D3Fbd071b42"
threshold = 0.5
idleTimerPeriod = "1s"
pollTimerPeriod = "1m"
`

describe('loader: the checks of a job type', () => {
  it('runs them on a pipeline that loads, on the line of the field they are about', () => {
    const problems = problemsOf('  a [type="any"]\n  b [type="any"]', FLUX)
    expect(problems).toEqual([
      expect.objectContaining({
        field: 'observationSource',
        line: 8,
        jobType: 'fluxmonitor',
        message: expect.stringContaining('it ends in 2 (a, b)'),
      }),
    ])
  })

  it('leaves them out while the pipeline has problems of its own', () => {
    const cycle = problemsOf('  a [type="any"]\n  b [type="any"]\n  a -> b -> a', FLUX)
    expect(cycle.map((problem) => problem.message)).toEqual(['tasks form a cycle: a -> b -> a'])
    const refused = problemsOf('  a [type="any" colour="red"]\n  b [type="any"]', FLUX)
    expect(refused).toHaveLength(1)
    expect(refused[0]!.message).toMatch(/^unknown attribute colour for any/)
  })
})

describe('loader: spec files', () => {
  it('says a file it cannot read, and why', async () => {
    const file = 'test/pipeline/specs/no-such-spec.toml'
    const { job, problems } = await loadJobSpecFile(file)
    expect(job).toBeUndefined()
    expect(problems).toEqual([{ file, message: expect.stringMatching(/^cannot read: ENOENT/) }])
    const error = await parseJobSpecFile(file).catch((caught: unknown) => caught)
    expect(error).toBeInstanceOf(SpecError)
    expect(error).toMatchObject({ kind: 'config', problems })
    expect((error as SpecError).message).toMatch(
      /^test\/pipeline\/specs\/no-such-spec\.toml: cannot read: ENOENT/,
    )
  })

  it('throws every problem of a broken file, one a line, and gives the job of a good one', async () => {
    const broken = 'test/pipeline/specs/broken/missing-attribute.toml'
    const error = (await parseJobSpecFile(broken).catch((caught: unknown) => caught)) as SpecError
    expect(error).toBeInstanceOf(SpecError)
    expect(error.message.split('\n')).toEqual(error.problems.map(formatProblem))
    expect(error.problems).toHaveLength(2)
    const job = await parseJobSpecFile('test/pipeline/specs/push/docs-cron.toml')
    expect(job.spec.name).toBe('docs-cron')
  })
})
