import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { loadJobSpec, TASK_TYPES } from '../../src/pipeline/index.ts'
import { allSpecFields } from '../../src/pipeline/job-spec/job-types.ts'
import { REFUSED_TASK_TYPES } from '../../src/pipeline/tasks/refused.ts'

// docs/job-specs.md, "Conformance with Chainlink": the tables and the code cannot drift apart.

const doc = readFileSync(join(import.meta.dirname, '../../docs/job-specs.md'), 'utf8')

/** The rows of the table between `<!-- conformance:<name>:start -->` and its end marker. */
function rows(name: string): string[][] {
  const section = new RegExp(
    `<!-- conformance:${name}:start -->([\\s\\S]*?)<!-- conformance:${name}:end -->`,
  ).exec(doc)?.[1]
  expect(section, `the ${name} table`).toBeDefined()
  return section!
    .trim()
    .split('\n')
    .slice(2)
    .map((line) =>
      line
        .replace(/^\||\|$/g, '')
        .split('|')
        .map((cell) => cell.trim()),
    )
}

const name = (cell: string) => /^`([^`]+)`$/.exec(cell)?.[1] ?? cell

describe('the conformance table of docs/job-specs.md', () => {
  const tasks = rows('tasks')
  const byType = new Map(tasks.map((row) => [name(row[0]!), row]))

  it('has one row per task type, each supported, differing (how) or refused (why)', () => {
    expect(byType.size).toBe(tasks.length)
    for (const [type, [, status, how, retryable]] of byType) {
      expect(['supported', 'differs', 'refused'], type).toContain(status)
      if (status !== 'supported') expect(how, `${type}: how it differs`).not.toBe('')
      if (status !== 'refused') expect(retryable, `${type}: retryable failures`).not.toBe('')
    }
  })

  it('lists exactly the task types of the registry as runnable', () => {
    const runnable = tasks.filter((row) => row[1] !== 'refused').map((row) => name(row[0]!))
    expect(runnable.sort()).toEqual([...TASK_TYPES.keys()].sort())
  })

  it('lists exactly the task types the loader refuses, and the loader refuses each with its reason', () => {
    const refused = tasks.filter((row) => row[1] === 'refused').map((row) => name(row[0]!))
    expect(refused.sort()).toEqual(Object.keys(REFUSED_TASK_TYPES).sort())
    for (const type of refused) {
      expect(TASK_TYPES.has(type)).toBe(false)
      const { problems } = loadJobSpec(
        [
          'type = "directrequest"',
          'schemaVersion = 1',
          'name = "refused"',
          'contractAddress = "0xe7f1725E7734CE288F8367e1Bb143E90bb3F0512"',
          'observationSource = """',
          `t [type=${type}]`,
          '"""',
        ].join('\n'),
        'refused.toml',
      )
      expect(problems.map((problem) => problem.message)).toEqual([
        `task type ${type} is not supported: ${REFUSED_TASK_TYPES[type]}`,
      ])
    }
  })

  it('says that jsonparse keeps numbers exact where Chainlink rounds through float64', () => {
    expect(byType.get('jsonparse')?.[1]).toBe('differs')
    expect(byType.get('jsonparse')?.[2]).toContain('float64')
  })

  it('lists exactly the spec fields of the schema', () => {
    const fields = rows('fields')
    for (const [field, status, how] of fields) {
      expect(['supported', 'differs'], field).toContain(status)
      if (status === 'differs') expect(how, `${field}: how it differs`).not.toBe('')
    }
    expect(fields.map((row) => name(row[0]!)).sort()).toEqual(allSpecFields().sort())
  })
})
