import { describe, expect, it } from 'vitest'
import { TASK_TYPES } from '../../../src/pipeline/index.ts'
import { runTask } from '../support/task.ts'

/** What Chainlink's table (chainlink/structures.test.ts) leaves out: the load-time check, nulls, bytes. */
describe('merge beyond the Chainlink table', () => {
  const check = (attributes: Record<string, string>) =>
    TASK_TYPES.get('merge')!.check!(attributes).map((problem) => problem.attribute)

  it('checks at load time that each side written in the spec is a JSON object or a $(variable)', () => {
    expect(check({ right: '{"a": 1}' })).toEqual([])
    expect(check({ left: '', right: ' $(x.y) ' })).toEqual([])
    expect(check({ left: '  ', right: '$(x.y)' })).toEqual([])
    expect(check({ left: '{}', right: '$(a) $(b)' })).toEqual(['right'])
    expect(check({ left: '[1, 2]', right: '{"a": 1}' })).toEqual(['left'])
    expect(check({ left: 'not json', right: '42' })).toEqual(['left', 'right'])
    const [problem] = TASK_TYPES.get('merge')!.check!({ right: 'x'.repeat(100) })
    expect(problem!.message).toBe(`must be a JSON object or a $(variable), got ${'x'.repeat(60)}`)
  })

  it('a null side is no map (the other side alone), and a map may come as JSON bytes', async () => {
    expect(
      await runTask('merge', { left: '{"a": 1}', right: '$(x)' }, { vars: { x: null } }),
    ).toEqual({ a: 1 })
    expect(
      await runTask(
        'merge',
        { right: '{"b": 2}' },
        { inputs: [new TextEncoder().encode('{"a": 1}')] },
      ),
    ).toEqual({ a: 1, b: 2 })
  })

  it('refuses two inputs, and JSON that does not parse with the side it came from', async () => {
    await expect(runTask('merge', { right: '{}' }, { inputs: [{}, {}] })).rejects.toThrow(
      'merge takes at most one input, got 2',
    )
    await expect(
      runTask('merge', { left: '{}', right: '$(x)' }, { vars: { x: '{"a":' } }),
    ).rejects.toThrow(/^right-side: not JSON: /)
    await expect(
      runTask('merge', { right: '$(x)' }, { vars: { x: 7n }, inputs: [{}] }),
    ).rejects.toThrow('right-side: expected a map, got ')
  })

  it('an undefined variable is no map either, as a CBOR request may carry one', async () => {
    const vars = { decoded: { x: undefined } }
    expect(await runTask('merge', { left: '{"a": 1}', right: '$(decoded.x)' }, { vars })).toEqual({
      a: 1,
    })
  })

  it('reads JSON text in a variable as it is, a lone surrogate kept', async () => {
    const vars = { x: '{"a": "\uD800"}' }
    expect(await runTask('merge', { left: '{}', right: '$(x)' }, { vars })).toEqual({
      a: '\uD800',
    })
  })
})
