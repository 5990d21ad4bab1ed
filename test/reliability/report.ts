/**
 * Prints the figures the reliability tests recorded in their last run (`npm run test:reliability`
 * runs it after vitest): requests, faults injected and outcomes per scenario.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { FIGURES_DIR } from './support.ts'

const ORDER = [
  'crash',
  'redis-restart',
  'provider-faults',
  'reorg',
  'hostile-input-adapter',
  'hostile-input-pipeline',
  'secrets',
  'signed-keys',
  'shutdown',
]

function main(): void {
  if (!existsSync(FIGURES_DIR)) {
    console.log('no reliability figures recorded (run the tests first)')
    return
  }
  const files = readdirSync(FIGURES_DIR).filter((file) => file.endsWith('.json'))
  const records = files.map(
    (file) =>
      JSON.parse(readFileSync(join(FIGURES_DIR, file), 'utf8')) as {
        name: string
        at: string
      } & Record<string, unknown>,
  )
  records.sort((a, b) => ORDER.indexOf(a.name) - ORDER.indexOf(b.name))
  console.log('\nReliability figures (last run of each scenario)\n')
  for (const { name, at, ...figures } of records) {
    console.log(`${name}  (${at})`)
    for (const [key, value] of Object.entries(figures))
      console.log(`  ${key}: ${typeof value === 'object' ? JSON.stringify(value) : String(value)}`)
  }
}

main()
