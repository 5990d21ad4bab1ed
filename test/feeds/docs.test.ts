import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { catalogEntries } from '../../src/feeds/catalog/index.ts'
import {
  FEEDS_PAGE,
  README_END,
  README_START,
  feedsReadmeSection,
  withFeedsSection,
} from '../../src/feeds/docs.ts'

describe('the Feeds section of docs/feeds.md', () => {
  it('matches the catalog (regenerate with `feedrunner feeds docs --write`)', () => {
    const readme = readFileSync(new URL(`../../${FEEDS_PAGE}`, import.meta.url), 'utf8')
    const section = readme
      .slice(readme.indexOf(README_START) + README_START.length, readme.indexOf(README_END))
      .trim()
    expect(section).toBe(feedsReadmeSection())
    expect(withFeedsSection(readme)).toBe(readme)
  })

  it('lists every endpoint with its path', () => {
    const section = feedsReadmeSection()
    for (const entry of catalogEntries)
      expect(section).toContain(`| \`${entry.name}\` | ${entry.family} | \`${entry.path}\` |`)
  })
})
