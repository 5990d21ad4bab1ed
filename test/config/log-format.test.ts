import { spawnSync } from 'node:child_process'
import { describe, expect, it } from 'vitest'

const fixture = new URL('./fixtures/log-one-line.ts', import.meta.url).pathname
const ESC = '\u001b['

/** What the fixture writes, to a pipe or (through `script`) to a pseudo-terminal. */
function logged(to: 'pipe' | 'terminal', env: Record<string, string>): string {
  const inherited = { ...process.env }
  delete inherited.LOG_FORMAT
  delete inherited.NO_COLOR
  const command = `${process.execPath} --import tsx ${fixture}`
  const child =
    to === 'pipe'
      ? spawnSync(process.execPath, ['--import', 'tsx', fixture], {
          env: { ...inherited, ...env },
          encoding: 'utf8',
        })
      : spawnSync('script', ['-qec', command, '/dev/null'], {
          env: { ...inherited, ...env },
          encoding: 'utf8',
        })
  expect(child.status, child.stderr).toBe(0)
  expect(child.stdout).toContain('hello from the logger')
  return child.stdout
}

function isJsonLine(output: string): boolean {
  const line = output.split(/\r?\n/).find((text) => text.includes('hello from the logger')) ?? ''
  try {
    return JSON.parse(line).answer === 42
  } catch {
    return false
  }
}

describe('log format', () => {
  it('JSON without colour codes to a pipe', () => {
    const output = logged('pipe', {})
    expect(isJsonLine(output)).toBe(true)
    expect(output).not.toContain(ESC)
  })

  it('pretty and coloured on a terminal; NO_COLOR keeps it pretty without colour', () => {
    const coloured = logged('terminal', {})
    expect(isJsonLine(coloured)).toBe(false)
    expect(coloured).toContain(ESC)
    const plain = logged('terminal', { NO_COLOR: '1' })
    expect(isJsonLine(plain)).toBe(false)
    expect(plain).not.toContain(ESC)
  })

  it('LOG_FORMAT wins: json on a terminal, pretty (without colour) to a pipe', () => {
    expect(isJsonLine(logged('terminal', { LOG_FORMAT: 'json' }))).toBe(true)
    const pretty = logged('pipe', { LOG_FORMAT: 'pretty' })
    expect(isJsonLine(pretty)).toBe(false)
    expect(pretty).not.toContain(ESC)
  })
})
