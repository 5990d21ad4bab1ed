import { describe, expect, it } from 'vitest'
import { quoteBareNumerals } from '../../src/pipeline/job-spec/dot.ts'

/**
 * The DOT parser reads a bare numeral as a JavaScript number and loses digits past 2^53; the loader
 * quotes each one first. What it passes over must come through exactly as written: a numeral inside a
 * quoted string, a `<...>` string (nested too) or a comment is not an attribute's value.
 */
describe('observationSource numerals kept as written', () => {
  it('quotes each bare numeral after `=`, spaces and signs as DOT allows', () => {
    expect(quoteBareNumerals('a [x=1 y= 2.5 z=-3 w=.5 v=1.]')).toBe(
      'a [x="1" y= "2.5" z="-3" w=".5" v="1."]',
    )
    expect(quoteBareNumerals('a [x=123456789012345678901234567890]')).toBe(
      'a [x="123456789012345678901234567890"]',
    )
    // Not a numeral: more of an ID follows.
    expect(quoteBareNumerals('a [x=1e5 y=2x]')).toBe('a [x=1e5 y=2x]')
  })

  it('passes over quoted strings, nested <...> strings and every kind of comment', () => {
    const opaque = [
      'a [x="q\\"=1" y=<<b>=1</b>>]',
      'a [x=<a=<b=2>=3>]',
      'a [x=""] // y=2',
      'a [x=""] # y=2',
      'a [x=""] /* y=2\n z=3 */',
    ]
    for (const source of opaque) expect(quoteBareNumerals(source)).toBe(source)
    expect(quoteBareNumerals('a [x=<<b>1</b>> y=2]')).toBe('a [x=<<b>1</b>> y="2"]')
    expect(quoteBareNumerals('a // y=2\nb [z=3]')).toBe('a // y=2\nb [z="3"]')
    expect(quoteBareNumerals('a /* y=2 */ b [z=3]')).toBe('a /* y=2 */ b [z="3"]')
  })

  it('leaves a string, `<...>` or comment that never ends as it is, to the end of the text', () => {
    for (const source of ['a [x=<1 y=2', 'a [x="1 y=2', 'a /* y=2', 'a // y=2'])
      expect(quoteBareNumerals(source)).toBe(source)
  })
})
