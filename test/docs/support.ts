import { readdirSync } from 'node:fs'
import { join } from 'node:path'

const projectRoot = join(import.meta.dirname, '../..')

/** README.md and every page of the manual. */
export function documentationFiles(): string[] {
  const docs = readdirSync(join(projectRoot, 'docs'))
    .filter((name) => name.endsWith('.md'))
    .map((name) => join(projectRoot, 'docs', name))
  return [join(projectRoot, 'README.md'), ...docs]
}
