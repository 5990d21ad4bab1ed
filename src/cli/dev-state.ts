import { DEFAULT_DEV_STATE_FILE, readDevState, type DevState } from '../dev/state.ts'
import { presentVariables } from '../config/settings.ts'
import { settingsOrExit } from './lifecycle.ts'

/** The state file of this checkout's dev stack (DEV_STATE_FILE moves it, e.g. for tests). */
export function devStateFile(env: NodeJS.ProcessEnv = process.env): string {
  return settingsOrExit(env).DEV_STATE_FILE ?? DEFAULT_DEV_STATE_FILE
}

/** The dev stack running from this checkout, if any. */
export function runningDevStack(env: NodeJS.ProcessEnv = process.env): DevState | undefined {
  return readDevState(devStateFile(env))
}

/**
 * The environment of a command that talks to a running feedrunner: what the dev stack of this
 * checkout recorded (its Redis, queue prefix, chain and jobs), under what the environment sets, so
 * `status` or `request` in a second terminal needs no variables and an explicit variable still wins.
 */
export function withDevStack(env: NodeJS.ProcessEnv = process.env): {
  env: NodeJS.ProcessEnv
  devStack?: DevState
} {
  const devStack = runningDevStack(env)
  if (!devStack) return { env }
  const recorded: Record<string, string> = {
    REDIS_URL: devStack.redisUrl,
    QUEUE_PREFIX: devStack.queuePrefix,
    RPC_URL: devStack.rpcUrl,
    JOBS_DIR: devStack.jobsDir,
    BRIDGE_DATAFEED_URL: devStack.adapterUrl,
    ...(devStack.contracts.forwarder ? { FORWARDER_ADDRESS: devStack.contracts.forwarder } : {}),
  }
  return { env: { ...recorded, ...presentVariables(env) }, devStack }
}

/** What a command says when it needs a dev stack and none runs from this checkout. */
export const NO_DEV_STACK =
  'no dev stack is running here: start one with npm start (in this checkout), or set RPC_URL to a chain that feedrunner serves'
