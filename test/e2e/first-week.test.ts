import { spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import {
  chmodSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  rmSync,
  writeFileSync,
} from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Contract, decryptKeystoreJsonSync, getAddress, JsonRpcProvider } from 'ethers'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ANVIL_PRIVATE_KEYS, startAnvil, type Anvil } from '../../src/dev/anvil.ts'
import { testRedisUrl, uniquePrefix } from '../support/redis.ts'

// docs/operating.md, "The first week": every block fenced ```sh first-week runs here as written, in
// order, with `feedrunner` on the PATH as an npm install puts it, against a chain of its own; what the
// blocks say they do is read from the chain and the keystore folder.

const projectRoot = join(import.meta.dirname, '../..')
const OPERATOR_ABI = ['function getAuthorizedSenders() view returns (address[])']

function firstWeekBlocks(): string[] {
  const text = readFileSync(join(projectRoot, 'docs/operating.md'), 'utf8')
  return [...text.matchAll(/^```sh first-week\n([\s\S]*?)^```$/gm)].map((match) => match[1]!)
}

function sh(
  script: string,
  env: NodeJS.ProcessEnv,
  cwd: string,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolveRun, reject) => {
    const child = spawn('sh', ['-e', '-c', script], { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()))
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()))
    // Only a hang: each block runs a few commands.
    const timer = setTimeout(() => {
      child.kill('SIGKILL')
      reject(new Error(`had not ended after 240 s:\n${script}\n${stdout}\n${stderr}`))
    }, 240_000)
    child.once('exit', (code) => {
      clearTimeout(timer)
      resolveRun({ code, stdout, stderr })
    })
  })
}

describe('docs/operating.md, the first week', () => {
  let anvil: Anvil
  let provider: JsonRpcProvider
  const dir = mkdtempSync(join(tmpdir(), 'feedrunner-first-week-'))
  const keysDir = join(dir, 'keys')
  const passwordFile = join(dir, 'keys.password')
  let env: NodeJS.ProcessEnv
  const blocks = firstWeekBlocks()
  let at = 0
  /** The next block of the section, run as written. */
  const nextBlock = async () => {
    const script = blocks[at++]
    expect(script, 'a ```sh first-week block').toBeDefined()
    const result = await sh(script!, env, dir)
    expect(result.code, `${script}\n${result.stdout}\n${result.stderr}`).toBe(0)
    return result
  }
  const senders = async () =>
    (
      (await new Contract(env.OPERATOR!, OPERATOR_ABI, provider).getFunction(
        'getAuthorizedSenders',
      )()) as string[]
    ).map((address) => getAddress(address))
  const keyFiles = () => readdirSync(keysDir)

  beforeAll(async () => {
    anvil = await startAnvil({ chainId: 4247 })
    provider = new JsonRpcProvider(anvil.rpcUrl, 4247, { staticNetwork: true, cacheTimeout: -1 })
    // `feedrunner` on the PATH, as node_modules/.bin of an npm install has it.
    const bin = join(dir, 'bin')
    mkdirSync(bin)
    writeFileSync(
      join(bin, 'feedrunner'),
      `#!/bin/sh\nexec "${process.execPath}" "${join(projectRoot, 'bin/feedrunner.js')}" "$@"\n`,
    )
    chmodSync(join(bin, 'feedrunner'), 0o755)
    mkdirSync(join(dir, 'backup'))
    writeFileSync(passwordFile, `${randomBytes(24).toString('base64url')}\n`, { mode: 0o600 })
    env = {
      ...process.env,
      PATH: `${bin}:${process.env.PATH}`,
      LOG_LEVEL: 'warn',
      RPC_URL: anvil.rpcUrl,
      KEYSTORE_DIR: keysDir,
      KEYSTORE_PASSWORD_FILE: passwordFile,
      OWNER_KEY: ANVIL_PRIVATE_KEYS[0],
      REDIS_URL: testRedisUrl(),
      QUEUE_PREFIX: uniquePrefix('first-week'),
      JOBS_DIR: join(projectRoot, 'jobs'),
      BACKUP_DIR: join(dir, 'backup'),
      // No dev stack of this checkout takes part.
      DEV_STATE_FILE: join(dir, 'dev.json'),
    }
    // The first hour (the section before): a key, an Operator, the key authorised.
    const setup = await sh(
      [
        'feedrunner keys create --json > old.json',
        'feedrunner operator deploy --owner-key-env OWNER_KEY --json > deployed.json',
        'node -p "require(\'./deployed.json\').operator" > operator',
        'feedrunner operator authorize --operator "$(cat operator)" --owner-key-env OWNER_KEY --fund-eth 1',
      ].join('\n'),
      env,
      dir,
    )
    expect(setup.code, setup.stderr).toBe(0)
    env.OLD_KEY = (
      JSON.parse(readFileSync(join(dir, 'old.json'), 'utf8')) as { address: string }
    ).address
    env.OPERATOR = readFileSync(join(dir, 'operator'), 'utf8').trim()
  }, 300_000)

  afterAll(async () => {
    provider?.destroy()
    await anvil?.stop()
    rmSync(dir, { recursive: true, force: true })
  })

  it('keys backed up: the export opens with the password and is the old key', async () => {
    const { stdout } = await nextBlock()
    expect(stdout).toContain(env.OLD_KEY)
    const backup = readFileSync(join(dir, 'backup/sender-old.json'), 'utf8')
    const password = readFileSync(passwordFile, 'utf8').split('\n')[0]!
    expect(getAddress(decryptKeystoreJsonSync(backup, password).address)).toBe(env.OLD_KEY)
  }, 240_000)

  it('a key rotated: the new key authorised beside the old, then the old deleted and unauthorised', async () => {
    expect(await senders()).toEqual([env.OLD_KEY])
    await nextBlock()
    expect(keyFiles()).toHaveLength(2)
    const added = (await senders()).filter((address) => address !== env.OLD_KEY)
    expect(added).toHaveLength(1)
    expect(await senders()).toContain(env.OLD_KEY)
    env.NEW_KEY = added[0]!
    expect(await provider.getBalance(env.NEW_KEY)).toBeGreaterThan(0n)

    const { stdout } = await nextBlock()
    expect(keyFiles()).toHaveLength(1)
    expect(keyFiles()[0]!.toLowerCase()).toContain(env.NEW_KEY.slice(2).toLowerCase())
    expect(await senders()).toEqual([env.NEW_KEY])
    // operator show --json, the block's last command, says what the chain says.
    const shown = JSON.parse(stdout.slice(stdout.lastIndexOf('\n{\n') + 1)) as {
      authorizedSenders: string[]
    }
    expect(shown.authorizedSenders).toEqual([env.NEW_KEY])
  }, 480_000)

  it('an upgrade: what is in flight before, status and the served jobs after, as JSON', async () => {
    const before = await nextBlock()
    // Two JSON documents, one a command: nothing runs on this prefix.
    expect(before.stdout.trim()).toMatch(/^\[\s*\]\s*\[\s*\]$/)
    const after = await nextBlock()
    expect(after.stdout).toContain('"queues"')
    expect(at).toBe(blocks.length)
  }, 240_000)
})
