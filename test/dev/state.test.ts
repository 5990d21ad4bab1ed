import { execFileSync, spawnSync } from 'node:child_process'
import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, relative } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import {
  DEFAULT_DEV_STATE_FILE,
  readDevState,
  removeDevState,
  writeDevState,
  type DevState,
} from '../../src/dev/state.ts'

const projectRoot = join(import.meta.dirname, '../..')
const dir = mkdtempSync(join(tmpdir(), 'feedrunner-state-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

function state(pid: number): DevState {
  return {
    pid,
    startedAt: new Date().toISOString(),
    redisUrl: 'redis://127.0.0.1:40000',
    queuePrefix: 'feedrunner-dev',
    rpcUrl: 'http://127.0.0.1:8545',
    chainId: 31337,
    jobsDir: join(projectRoot, 'jobs'),
    adapterUrl: 'http://127.0.0.1:8080',
    feedServiceUrl: 'http://127.0.0.1:8090',
    metricsUrl: 'http://127.0.0.1:8080/metrics',
    healthUrl: 'http://127.0.0.1:8080/ready',
    contracts: { linkToken: '0x1', operator: '0x2', consumer: '0x3' },
  }
}

describe('the dev stack state file', () => {
  it('lives in the checkout, where git ignores it', () => {
    const path = relative(projectRoot, DEFAULT_DEV_STATE_FILE)
    expect(path.startsWith('..')).toBe(false)
    // check-ignore exits 0 when the path is ignored.
    const ignored = spawnSync('git', ['check-ignore', '-q', path], { cwd: projectRoot })
    expect(
      ignored.status,
      execFileSync('git', ['status', '--short'], { cwd: projectRoot }).toString(),
    ).toBe(0)
  })

  it('is read back while its process lives, and ignored once that process is gone', () => {
    const file = join(dir, 'alive.json')
    writeDevState(file, state(process.pid))
    expect(readDevState(file)?.redisUrl).toBe('redis://127.0.0.1:40000')
    // A process that has ended: the file a killed stack could not remove.
    const ended = spawnSync(process.execPath, ['-e', 'process.exit(0)']).pid!
    writeDevState(file, state(ended))
    expect(readDevState(file)).toBeUndefined()
  })

  it('is removed only by the process that wrote it', () => {
    const file = join(dir, 'owned.json')
    writeDevState(file, state(process.ppid))
    removeDevState(file)
    expect(existsSync(file)).toBe(true)
    writeDevState(file, state(process.pid))
    removeDevState(file)
    expect(existsSync(file)).toBe(false)
  })

  it('a file that is not a state file counts as no stack', () => {
    expect(readDevState(join(dir, 'missing.json'))).toBeUndefined()
    const file = join(dir, 'broken.json')
    writeDevState(file, state(process.pid))
    execFileSync('sh', ['-c', `echo '{"pid": "x"' > ${file}`])
    expect(readDevState(file)).toBeUndefined()
  })
})
