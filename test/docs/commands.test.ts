import { spawn } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { freePort } from '../../src/dev/ports.ts'
import { startOwnedProcess, waitFor, type OwnedProcess } from '../../src/dev/process.ts'
import { documentationFiles } from './support.ts'
import { shellCommands } from './shell-words.ts'

// Every block marked ```sh runnable in README.md and docs/ runs here, as written, in a shell in the
// checkout, against a dev stack started as `npm start` starts it: "every command shown works".
// Blocks that start a server of their own or need a secret are shown as plain ```sh and not run.

const projectRoot = join(import.meta.dirname, '../..')

interface Block {
  file: string
  script: string
}

/** The runnable blocks, README first (its request is the first on the fresh chain), then docs/. */
function runnableBlocks(): Block[] {
  return documentationFiles().flatMap((file) =>
    [...readFileSync(file, 'utf8').matchAll(/^```sh runnable\n([\s\S]*?)^```$/gm)].map((match) => ({
      file: file.slice(projectRoot.length + 1),
      script: match[1]!,
    })),
  )
}

/** A second terminal: nothing in it says where the stack runs but the state file's location. */
function terminalEnv(stateFile: string): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, DEV_STATE_FILE: stateFile }
  for (const name of ['REDIS_URL', 'QUEUE_PREFIX', 'RPC_URL', 'JOBS_DIR', 'EA_PORT'])
    delete env[name]
  for (const name of Object.keys(env)) if (name.startsWith('BRIDGE_')) delete env[name]
  return env
}

function runScript(
  script: string,
  env: NodeJS.ProcessEnv,
  boundMs: number,
): Promise<{ code: number | null; output: string }> {
  return new Promise((resolveRun, reject) => {
    const child = spawn('sh', ['-e', '-c', script], {
      cwd: projectRoot,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let output = ''
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()))
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()))
    const timer = setTimeout(() => {
      child.kill('SIGKILL')
      reject(new Error(`had not ended after ${boundMs} ms:\n${output}`))
    }, boundMs)
    child.once('exit', (code) => {
      clearTimeout(timer)
      resolveRun({ code, output })
    })
  })
}

/**
 * The adapter requests the docs show (`curl ... localhost:8080 ... -d '<body>'`): `feedrunner adapter`'s
 * default port, where the dev stack's adapter may not be. Their bodies are sent to the stack's adapter.
 */
function adapterRequestBodies(): Array<{ file: string; body: string }> {
  return documentationFiles().flatMap((file) =>
    [...readFileSync(file, 'utf8').matchAll(/^```sh(?: runnable)?\n([\s\S]*?)^```$/gm)]
      .flatMap((match) => shellCommands(match[1]!))
      .filter(
        (words) => words[0] === 'curl' && words.some((word) => /localhost:8080\/?$/.test(word)),
      )
      .map((words) => ({
        file: file.slice(projectRoot.length + 1),
        body: words[words.indexOf('-d') + 1] ?? '',
      })),
  )
}

describe('the commands shown in README.md and docs/', () => {
  const stateDir = mkdtempSync(join(tmpdir(), 'feedrunner-doc-commands-'))
  const stateFile = join(stateDir, 'dev.json')
  let dev: OwnedProcess
  const blocks = runnableBlocks()

  beforeAll(async () => {
    dev = startOwnedProcess(
      'feedrunner dev',
      process.execPath,
      [join(projectRoot, 'bin/feedrunner.js'), 'dev'],
      {
        cwd: projectRoot,
        env: {
          ...terminalEnv(stateFile),
          // Nothing answers here: the stack starts its own redis-server, as on a fresh machine.
          REDIS_URL: `redis://127.0.0.1:${await freePort()}`,
          LOG_LEVEL: 'warn',
        },
        keepOutputChars: 20_000,
        stopGraceMs: 15_000,
      },
    )
    await waitFor(
      'feedrunner dev to be ready',
      async () => dev.output().includes('feedrunner dev ready'),
      300_000,
      200,
    )
  }, 320_000)

  afterAll(async () => {
    await dev?.stop()
    rmSync(stateDir, { recursive: true, force: true })
  })

  it('finds the runnable blocks (the quick start is one of them)', () => {
    expect(blocks.map((block) => block.file)).toContain('README.md')
    expect(blocks.some((block) => block.script.includes('feedrunner request game-odds'))).toBe(true)
  })

  it("answers the docs' adapter requests (sent to the stack's adapter) with a result", async () => {
    const requests = adapterRequestBodies()
    expect(requests.map((request) => request.file)).toContain('docs/adapter.md')
    const { adapterUrl } = JSON.parse(readFileSync(stateFile, 'utf8')) as { adapterUrl: string }
    for (const { file, body } of requests) {
      const answer = await fetch(adapterUrl, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body,
      })
      const text = await answer.text()
      expect(answer.status, `${file}: ${body}\n${text}`).toBe(200)
      expect((JSON.parse(text) as { result?: unknown }).result, text).toBeDefined()
    }
  })

  it('runs every runnable block as written, each exiting 0', async () => {
    for (const block of blocks) {
      const finished = await runScript(block.script, terminalEnv(stateFile), 400_000)
      expect(
        finished.code,
        `${block.file}:\n${block.script}\n--- output:\n${finished.output}`,
      ).toBe(0)
    }
  }, 1_500_000)
})
