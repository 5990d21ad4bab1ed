import { mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { z } from 'zod'

const projectRoot = resolve(dirname(fileURLToPath(import.meta.url)), '../..')

/**
 * Where `feedrunner dev` records what it runs, in the checkout (git ignores `.feedrunner/`), so
 * `status`, `runs show` and `request` in another terminal find the stack without variables: its
 * Redis may be a private one on a random port and its queues live under their own prefix.
 */
export const DEFAULT_DEV_STATE_FILE = join(projectRoot, '.feedrunner', 'dev.json')

/** What a running dev stack tells the other commands. No secret: the feed key stays in the process. */
export const devStateSchema = z.object({
  pid: z.number().int().positive(),
  startedAt: z.string(),
  redisUrl: z.string(),
  queuePrefix: z.string(),
  rpcUrl: z.string(),
  chainId: z.number().int().positive(),
  jobsDir: z.string(),
  adapterUrl: z.string(),
  feedServiceUrl: z.string(),
  metricsUrl: z.string(),
  healthUrl: z.string(),
  dashboardUrl: z.string().optional(),
  /** The ERC-20 transfer the stack made on its chain: the blockchain family's example asks for it. */
  demoTransferTx: z.string().optional(),
  /** The PushedValues the push jobs write (cron, webhook): `status` reads each one's latest round. */
  pushedValues: z.array(z.object({ job: z.string(), address: z.string() })).optional(),
  contracts: z.object({
    linkToken: z.string(),
    operator: z.string(),
    consumer: z.string(),
    forwarder: z.string().optional(),
  }),
})
export type DevState = z.infer<typeof devStateSchema>

/** Writes the state atomically (a reader never sees half a file). */
export function writeDevState(file: string, state: DevState): void {
  mkdirSync(dirname(file), { recursive: true })
  const temporary = `${file}.${process.pid}.tmp`
  writeFileSync(temporary, `${JSON.stringify(state, null, 2)}\n`)
  renameSync(temporary, file)
}

/** Removes the state file when it is this process's own (a newer stack's file is left alone). */
export function removeDevState(file: string, pid = process.pid): void {
  const state = readStateFile(file)
  if (state?.pid === pid) rmSync(file, { force: true })
}

/**
 * The running dev stack's state, or undefined when there is none: no file, a file that does not
 * parse, or one left by a process that is gone (a stack killed with SIGKILL cannot remove it).
 */
export function readDevState(file: string): DevState | undefined {
  const state = readStateFile(file)
  return state && processAlive(state.pid) ? state : undefined
}

function readStateFile(file: string): DevState | undefined {
  let text: string
  try {
    text = readFileSync(file, 'utf8')
  } catch {
    return undefined
  }
  try {
    const parsed = devStateSchema.safeParse(JSON.parse(text))
    return parsed.success ? parsed.data : undefined
  } catch {
    return undefined
  }
}

/** Whether a process with this id runs on this host (EPERM: it does, as another user's). */
export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    // EPERM: it exists but belongs to another user.
    return (error as NodeJS.ErrnoException).code === 'EPERM'
  }
}
