// Writes docs/configuration.md and .env.example from the settings schema; `--check` only says which
// are stale (exit 1). Run with `npm run docs:config`.
import { readFileSync, writeFileSync, mkdirSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { GENERATED_CONFIG_FILES } from '../src/config/settings-docs.ts'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const check = process.argv.includes('--check')
let stale = 0
for (const [file, render] of Object.entries(GENERATED_CONFIG_FILES)) {
  const path = join(root, file)
  const wanted = render()
  let current: string | undefined
  try {
    current = readFileSync(path, 'utf8')
  } catch {
    current = undefined
  }
  if (current === wanted) continue
  if (check) {
    console.error(`${file} is stale: run npm run docs:config`)
    stale++
  } else {
    mkdirSync(dirname(path), { recursive: true })
    writeFileSync(path, wanted)
    console.log(`wrote ${file}`)
  }
}
process.exitCode = stale > 0 ? 1 : 0
