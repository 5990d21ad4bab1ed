import { existsSync, readFileSync } from 'node:fs'
import { dirname, join, resolve } from 'node:path'
import { describe, expect, it } from 'vitest'
import { documentationFiles } from './support.ts'

const projectRoot = join(import.meta.dirname, '../..')

/** Markdown link targets, `[text](target)`, outside code blocks and inline code. */
function linkTargets(markdown: string): string[] {
  const prose = markdown.replace(/```[\s\S]*?```/g, '').replace(/`[^`\n]*`/g, '')
  return [...prose.matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)].map((match) => match[1]!)
}

/** The anchors a page offers: GitHub's slugs of its headings. */
function anchors(markdown: string): Set<string> {
  const prose = markdown.replace(/```[\s\S]*?```/g, '')
  return new Set(
    [...prose.matchAll(/^#{1,6}\s+(.+)$/gm)].map((match) =>
      match[1]!
        .trim()
        .toLowerCase()
        .replace(/[^\p{L}\p{N}\s_-]/gu, '')
        .replace(/\s/g, '-'),
    ),
  )
}

describe('documentation links', () => {
  it('the README stays a short front page (under 250 lines)', () => {
    const lines = readFileSync(join(projectRoot, 'README.md'), 'utf8').split('\n').length
    expect(lines).toBeLessThan(250)
  })

  it('every relative link in README.md and docs/ resolves to a file in the repository (and its anchor)', () => {
    const broken: string[] = []
    let checked = 0
    for (const file of documentationFiles()) {
      const markdown = readFileSync(file, 'utf8')
      for (const target of linkTargets(markdown)) {
        if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue // http:, https:, mailto:
        checked += 1
        const [path, anchor] = target.split('#') as [string, string | undefined]
        const resolved = path === '' ? file : resolve(dirname(file), path)
        const where = `${file.slice(projectRoot.length + 1)} -> ${target}`
        if (!existsSync(resolved)) broken.push(`${where}: no such file`)
        else if (
          anchor &&
          resolved.endsWith('.md') &&
          !anchors(readFileSync(resolved, 'utf8')).has(anchor)
        )
          broken.push(`${where}: no heading with that anchor`)
      }
    }
    expect(broken).toEqual([])
    // The pages do link to each other: a parser that found nothing would pass the check above.
    expect(checked).toBeGreaterThan(20)
  })
})
