import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { settingsSchema } from '../../src/config/settings.ts'

describe('.env.example', () => {
  it('lists every setting feedrunner reads', () => {
    const text = readFileSync(new URL('../../.env.example', import.meta.url), 'utf8')
    const listed = new Set(
      [...text.matchAll(/^#?\s*([A-Z][A-Z0-9_]*)=/gm)].map((match) => match[1]),
    )
    const missing = Object.keys(settingsSchema.shape).filter((name) => !listed.has(name))
    expect(missing).toEqual([])
  })
})
