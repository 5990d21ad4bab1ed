import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { loadJobSpec } from '../../src/pipeline/index.ts'

// Random and mangled specs: the loader answers with problems, never throws, never hangs.
const valid = `type = "directrequest"
schemaVersion = 1
name = "fuzz"
externalJobID = "0eec7e1d-d0d2-476c-a1a8-72dfb6633f46"
contractAddress = "0xe7f1725E7734CE288F8367e1Bb143E90bb3F0512"
evmChainID = "31337"
observationSource = """
    a [type="bridge" name="datafeed" requestData="{\\\\"x\\\\": $(jobRun.meta)}"]
    b [type="jsonparse" path="data,result"]
    c [type="multiply" times="100"]
    a -> b -> c
"""
`

describe('loader under hostile input', () => {
  it('random text gives problems, not exceptions', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 400 }), (text) => {
        const { job, problems } = loadJobSpec(text, 'fuzz.toml')
        expect(job === undefined ? problems.length > 0 : problems.length === 0).toBe(true)
      }),
      { numRuns: Number(process.env.FUZZ_RUNS ?? 400) },
    )
  })

  it('a valid spec with random edits gives a job or located problems', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: valid.length }),
        fc.integer({ min: 0, max: 40 }),
        fc.string({ maxLength: 20 }),
        (at, cut, insert) => {
          const text = valid.slice(0, at) + insert + valid.slice(at + cut)
          const { job, problems } = loadJobSpec(text, 'fuzz.toml')
          if (job) expect(problems).toEqual([])
          else for (const problem of problems) expect(problem.file).toBe('fuzz.toml')
          // Nothing reaches the catch-all: every problem is one the loader recognises.
          for (const problem of problems) expect(problem.message).not.toMatch(/^cannot be loaded/)
        },
      ),
      { numRuns: Number(process.env.FUZZ_RUNS ?? 400) },
    )
  })
})
