import fc from 'fast-check'
import { hexlify } from 'ethers'
import { describe, expect, it } from 'vitest'
import { encodeRequestParams, TaskError } from '../../../src/pipeline/index.ts'
import { runTask } from '../support/task.ts'

// Hostile request buffers: cborparse answers with a value or a TaskError, never anything else.
describe('cborparse under hostile input', () => {
  it('random bytes in diet and standard mode', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.uint8Array({ maxLength: 300 }),
        fc.constantFrom('diet', 'standard'),
        async (bytes, mode) => {
          try {
            await runTask('cborparse', { mode }, { inputs: [hexlify(bytes)] })
          } catch (error) {
            expect(error).toBeInstanceOf(TaskError)
          }
        },
      ),
      { numRuns: 500 },
    )
  })

  it('any string parameters round-trip through the request encoding', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.uniqueArray(
          fc.tuple(fc.string({ minLength: 1, maxLength: 30 }), fc.string({ maxLength: 300 })),
          { selector: ([key]) => key, maxLength: 8 },
        ),
        async (params) => {
          const decoded = await runTask('cborparse', {}, { inputs: [encodeRequestParams(params)] })
          expect(decoded).toEqual(Object.fromEntries(params))
        },
      ),
      { numRuns: 200 },
    )
  })

  it('refuses buffers over the size limit and deep nesting', async () => {
    await expect(runTask('cborparse', {}, { inputs: [new Uint8Array(70 * 1024)] })).rejects.toThrow(
      'more than 65536',
    )
    const deep = Uint8Array.from([0x61, 0x61, ...new Array(40).fill(0x81), 0x01])
    await expect(runTask('cborparse', {}, { inputs: [deep] })).rejects.toThrow('deeper than 32')
  })
})
