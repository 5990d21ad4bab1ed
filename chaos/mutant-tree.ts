import { execFileSync, spawn, type ChildProcess } from 'node:child_process'
import { createWriteStream, existsSync, mkdirSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

/** How long a check's processes get to stop after a signal before their group is SIGKILLed. */
const STOP_GRACE_MS = 30_000

/** What a child process of a check did: its exit code (null: ended by a signal) and its output file. */
export interface CheckExit {
  code: number | null
  log: string
}

/**
 * A temporary git worktree of the checkout's HEAD, where one patch at a time is applied and checked.
 * It shares the checkout's node_modules and compiled contracts (.cache/contracts) through links, so
 * nothing is installed or compiled again; src/ there runs through tsx (it has no dist/).
 */
export class MutantTree {
  readonly path: string
  private readonly dir: string
  private child: ChildProcess | undefined
  private removed = false
  /** Told to stop (an interrupt): the check under way ends and no other one starts. */
  stopping = false

  private constructor(
    /** The checkout the worktree was made from. */
    readonly root: string,
    dir: string,
  ) {
    this.dir = dir
    this.path = join(dir, 'tree')
  }

  /** Adds the worktree (detached at HEAD) and links what it shares with the checkout. */
  static create(root: string): MutantTree {
    const tree = new MutantTree(root, mkdtempSync(join(tmpdir(), 'feedrunner-mutants-')))
    try {
      git(root, 'worktree', 'add', '--detach', '--quiet', tree.path, 'HEAD')
      symlinkSync(join(root, 'node_modules'), join(tree.path, 'node_modules'), 'dir')
      mkdirSync(join(tree.path, '.cache'))
      const contracts = join(root, '.cache', 'contracts')
      if (existsSync(contracts))
        symlinkSync(contracts, join(tree.path, '.cache', 'contracts'), 'dir')
    } catch (error) {
      tree.remove()
      throw error
    }
    return tree
  }

  /** Back to HEAD as committed: the last patch, and whatever its checks wrote, gone. */
  reset(): void {
    git(this.path, 'reset', '--quiet', '--hard', 'HEAD')
    git(this.path, 'clean', '-fdq', '-e', 'node_modules', '-e', '.cache')
  }

  /** Applies a patch of src/; the words of `git apply` when it does not apply. */
  apply(patchFile: string): string | undefined {
    try {
      git(this.path, 'apply', '--whitespace=nowarn', patchFile)
      return undefined
    } catch (error) {
      return String((error as { stderr?: Buffer }).stderr ?? error).trim()
    }
  }

  /**
   * Runs a check in the tree, its output to `log`. The child leads a process group of its own, so an
   * interrupt reaches it and whatever it started, and nothing of it outlives a stop.
   */
  run(args: readonly string[], log: string): Promise<CheckExit> {
    if (this.stopping) return Promise.resolve({ code: null, log })
    const out = createWriteStream(log)
    const child = spawn(process.execPath, args, {
      cwd: this.path,
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, FORCE_COLOR: '0' },
    })
    this.child = child
    child.stdout?.pipe(out, { end: false })
    child.stderr?.pipe(out, { end: false })
    return new Promise((resolve) => {
      child.once('close', (code) => {
        this.child = undefined
        out.end(() => resolve({ code, log }))
      })
    })
  }

  /**
   * Stops checking: signals the running check's process group, then SIGKILLs it if it has not gone
   * within a bound; no check starts after.
   */
  async stop(signal: NodeJS.Signals): Promise<void> {
    this.stopping = true
    const child = this.child
    if (!child?.pid) return
    const group = -child.pid
    const gone = new Promise<void>((resolve) => child.once('close', () => resolve()))
    signalGroup(group, signal)
    const timer = setTimeout(() => signalGroup(group, 'SIGKILL'), STOP_GRACE_MS)
    await gone
    clearTimeout(timer)
  }

  /** Removes the worktree and its folder (once). */
  remove(): void {
    if (this.removed) return
    this.removed = true
    let registered = true
    try {
      git(this.root, 'worktree', 'remove', '--force', this.path)
    } catch {
      registered = false
    }
    rmSync(this.dir, { recursive: true, force: true })
    // Half made (or removed by hand): git forgets a worktree whose folder is gone.
    if (!registered) tryGit(this.root, 'worktree', 'prune')
  }
}

function git(cwd: string, ...args: string[]): string {
  return execFileSync('git', ['-C', cwd, ...args], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
  })
}

function tryGit(cwd: string, ...args: string[]): void {
  try {
    git(cwd, ...args)
  } catch {
    // Nothing to do.
  }
}

function signalGroup(group: number, signal: NodeJS.Signals): void {
  try {
    process.kill(group, signal)
  } catch {
    // The group is gone already.
  }
}
