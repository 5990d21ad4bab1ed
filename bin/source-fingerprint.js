// The state of src/ as one hash (every file's path, size and modification time), so bin/feedrunner.js
// can tell whether dist/ was built from the sources as they are now. Plain JavaScript: it runs before
// any TypeScript loader.
import { createHash } from 'node:crypto'
import { readFileSync, readdirSync, statSync } from 'node:fs'
import { join, relative } from 'node:path'

export function sourceFingerprint(srcDir) {
  const hash = createHash('sha1')
  const walk = (dir) => {
    for (const entry of readdirSync(dir, { withFileTypes: true }).sort((a, b) =>
      a.name < b.name ? -1 : 1,
    )) {
      const path = join(dir, entry.name)
      if (entry.isDirectory()) walk(path)
      else {
        const stat = statSync(path)
        hash.update(`${relative(srcDir, path)}:${stat.size}:${stat.mtimeMs}\n`)
      }
    }
  }
  walk(srcDir)
  return hash.digest('hex')
}

/** The fingerprint of the sources a build was made from (its BUILD.json), or undefined without one. */
export function builtFingerprint(distDir) {
  try {
    return JSON.parse(readFileSync(join(distDir, 'BUILD.json'), 'utf8')).fingerprint
  } catch {
    return undefined
  }
}
