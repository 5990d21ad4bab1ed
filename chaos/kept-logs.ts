import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'

/**
 * Writes each process's whole output of a schedule that found a violation, one file per process
 * (`<root>/<seed>-<time>/<process>.log`), and returns the folder. A violation that depends on timing
 * may not come back when its seed is replayed; what the processes said is its only evidence.
 */
export function keepLogs(
  root: string,
  seed: number,
  outputs: Readonly<Record<string, string>>,
  at: Date = new Date(),
): string {
  const folder = join(root, `${seed}-${at.toISOString().replace(/[:.]/g, '-')}`)
  mkdirSync(folder, { recursive: true })
  for (const [name, output] of Object.entries(outputs))
    writeFileSync(join(folder, `${name.replace(/[^A-Za-z0-9_-]/g, '_')}.log`), output)
  return folder
}
