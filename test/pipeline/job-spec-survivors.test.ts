import { describe, expect, it } from 'vitest'
import {
  duplicateJobIdProblems,
  formatProblem,
  loadJobSpec,
  SpecError,
  type SpecProblem,
} from '../../src/pipeline/index.ts'

// What a spec's reader (DOT text, task order, run variables, job ids) answers in the corners the
// other spec tests do not reach. Each spec below has its DOT text start on TOML line 6.

function spec(source: string, type = 'cron', head = 'name = "corners"'): string {
  const trigger = type === 'cron' ? 'schedule = "@every 1m"' : ''
  return `type = "${type}"
schemaVersion = 1
${head}
${trigger}
observationSource = """
${source}
"""
`
}

/** The formatted problems of a spec that must not load. */
function problemsOf(source: string, type?: string): string[] {
  const { job, problems } = loadJobSpec(spec(source, type), 'jobs/corners.toml')
  expect(job).toBeUndefined()
  return problems.map(formatProblem)
}

/** The attributes of the one task of a spec that must load. */
function attributesOf(source: string): Readonly<Record<string, string>> {
  const { job, problems } = loadJobSpec(spec(source), 'jobs/corners.toml')
  expect(problems.map(formatProblem)).toEqual([])
  return job!.tasks[0]!.attributes
}

const BIG = '12345678901234567891'

describe('DOT text: numerals and comments', () => {
  it('keeps every digit of a numeral written after a comment that follows its `=`', () => {
    expect(attributesOf(`a [type="multiply" input="1" times=/* why */ ${BIG}]`).times).toBe(BIG)
    expect(attributesOf(`a [type="multiply" input="1" times=# why\n ${BIG}]`).times).toBe(BIG)
    expect(attributesOf(`a [type="multiply" input="1" times= // why\n ${BIG}]`).times).toBe(BIG)
  })

  it('keeps every digit of a numeral after an empty block comment', () => {
    expect(attributesOf(`/**/\na [type="multiply" input="1" times=${BIG}]`).times).toBe(BIG)
  })

  it('reads a quote inside a block comment as part of the comment', () => {
    expect(attributesOf(`/* a "said" */\na [type="multiply" input="1" times=${BIG}]`).times).toBe(
      BIG,
    )
    expect(attributesOf(`/**//* " */\na [type="multiply" input="1" times=${BIG}]`).times).toBe(BIG)
  })

  it('reads an attribute written without a value as not given', () => {
    expect(problemsOf('a [type="multiply" input="1" times]')).toEqual([
      'jobs/corners.toml:6 (observationSource line 1): task a: multiply needs the attribute times',
    ])
  })

  it('reports DOT nested too deep to read as invalid DOT on the first line', () => {
    expect(problemsOf('{'.repeat(200_000))).toEqual([
      'jobs/corners.toml:6 (observationSource line 1): observationSource is not valid DOT: Maximum call stack size exceeded',
    ])
  })
})

describe('DOT text: the lines of tasks and attributes', () => {
  it('places a task on the line of its id when its attributes start on the next line', () => {
    const [problem] = problemsOf('a\n[type="nosuch"]')
    expect(problem).toMatch(/^jobs\/corners\.toml:6 \(observationSource line 1\): task a: unknown/)
  })

  it('places an attribute that starts a line on that line', () => {
    expect(problemsOf('a [type="multiply" input="1"\ntimes="x"]')).toEqual([
      'jobs/corners.toml:7 (observationSource line 2): task a: times must be a number, got "x"',
    ])
  })
})

describe('task order', () => {
  it('shows only the cycle, not the task first declared that waits on it', () => {
    const source = [
      'a [type="multiply" input="$(c)" times=2]',
      'b [type="multiply" input="$(c)" times=2]',
      'c [type="multiply" input="$(b)" times=2]',
    ].join('\n')
    expect(problemsOf(source)).toEqual([
      'jobs/corners.toml:8 (observationSource line 3): task c: tasks form a cycle: c -> b -> c',
    ])
  })
})

describe('run variables', () => {
  const reads = (keypath: string) => `a [type="multiply" input="$(${keypath})" times=2]`

  it('refuses $(jobSpec) alone, naming the variables a run has', () => {
    expect(problemsOf(reads('jobSpec'))).toEqual([
      'jobs/corners.toml:6 (observationSource line 1): task a: input refers to $(jobSpec), but a cron run has no jobSpec. (it has jobSpec.databaseID, jobSpec.name, jobSpec.externalJobID, jobSpec.evmChainID, jobSpec.gasLimit)',
    ])
  })

  it('refuses a key below a jobSpec variable, which every run would find missing', () => {
    expect(problemsOf(reads('jobSpec.name.first'))).toEqual([
      "jobs/corners.toml:6 (observationSource line 1): task a: input refers to $(jobSpec.name.first), but a cron run's jobSpec.name is a single value, with nothing below it",
    ])
  })

  it('takes a jobSpec variable itself', () => {
    expect(attributesOf(reads('jobSpec.name')).input).toBe('$(jobSpec.name)')
  })

  it("takes a key below a webhook's request body", () => {
    const { problems } = loadJobSpec(spec(reads('jobRun.requestBody.price'), 'webhook'), 'w.toml')
    expect(problems).toEqual([])
  })

  it("refuses a key below a webhook run's jobRun.meta, which holds nothing", () => {
    expect(problemsOf(reads('jobRun.meta.tick'), 'webhook')).toEqual([
      "jobs/corners.toml:6 (observationSource line 1): task a: input refers to $(jobRun.meta.tick), but a webhook run's jobRun.meta holds nothing below it",
    ])
  })

  it("refuses a key below a field of a cron run's jobRun.meta", () => {
    expect(problemsOf(reads('jobRun.meta.cron.tick.ms'))).toEqual([
      "jobs/corners.toml:6 (observationSource line 1): task a: input refers to $(jobRun.meta.cron.tick.ms), but a cron run's jobRun.meta holds only cron (jobRun.meta.cron.tick)",
    ])
  })
})

describe('job ids', () => {
  const source = 'a [type="multiply" input="1" times=2]'
  const idOf = (head: string, file: string): string => {
    const { job, problems } = loadJobSpec(spec(source, 'cron', head), file)
    expect(problems).toEqual([])
    return job!.spec.externalJobID
  }

  it('derives the same id from a name taken from a file name with spaces as from that name written', () => {
    expect(idOf('', 'jobs/ feed.toml')).toBe(idOf('name = "feed"', 'jobs/ feed.toml'))
    expect(idOf('', 'jobs/ feed.toml')).not.toBe(idOf('name = "feed"', 'jobs/feed.toml'))
  })

  it('two specs deriving one id: the problem is on the externalJobID of the later, with what to do', () => {
    const one = loadJobSpec(spec(source), 'jobs/a/feed.toml').job!
    const two = loadJobSpec(spec(source), 'other/b/feed.toml').job!
    const problems: SpecProblem[] = duplicateJobIdProblems([one, two])
    expect(problems).toEqual([
      {
        file: 'other/b/feed.toml',
        field: 'externalJobID',
        message: `externalJobID ${one.spec.externalJobID} is also the id of jobs/a/feed.toml; a request names its job by this id alone, so the two cannot both be served (derived from its name "corners" and file name: give it another name or an externalJobID)`,
      },
    ])
  })

  it('a spec that cannot be loaded is a SpecError by name', () => {
    const error = new SpecError([{ file: 'jobs/x.toml', message: 'broken' }])
    expect(error.name).toBe('SpecError')
    expect(String(error)).toBe('SpecError: jobs/x.toml: broken')
  })
})
