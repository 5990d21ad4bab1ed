import { spawnSync } from 'node:child_process'
import { describe, expect, it } from 'vitest'
import { freePort } from '../../src/dev/ports.ts'

const bin = new URL('../../bin/feedrunner.js', import.meta.url).pathname
const NODE_KEY = '0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d'

function runner(env: Record<string, string>) {
  return spawnSync(process.execPath, [bin, 'runner'], {
    env: { ...process.env, OPERATIONS_PORT: '0', NODE_PRIVATE_KEYS: '', ...env },
    encoding: 'utf8',
    timeout: 60_000,
  })
}

/** Settings are checked before anything connects, and a message never carries a secret. */
describe('feedrunner runner refuses to start, saying why', () => {
  it('on a zero node key: names the setting and what is wrong, not the value', () => {
    const zero = `0x${'0'.repeat(64)}`
    const child = runner({ NODE_PRIVATE_KEY: zero, RPC_URL: 'http://127.0.0.1:8545' })
    expect(child.status).toBe(1)
    expect(child.stderr).toContain(
      'NODE_PRIVATE_KEY is not a valid secp256k1 private key (it is zero)',
    )
    expect(child.stderr + child.stdout).not.toContain(zero.slice(2, 30))
  })

  it('on an RPC_URL nothing answers at: names the setting, host and port, never the path', async () => {
    const port = await freePort()
    const child = runner({
      NODE_PRIVATE_KEY: NODE_KEY,
      RPC_URL: `http://127.0.0.1:${port}/v2/secret-api-key-123`,
    })
    expect(child.status).toBe(1)
    expect(child.stderr).toContain(`nothing answers at RPC_URL 127.0.0.1:${port} (ECONNREFUSED)`)
    expect(child.stderr + child.stdout).not.toContain('secret-api-key-123')
    expect(child.stderr).not.toMatch(/\n\s+at .+:\d+:\d+/)
  })
})
