/**
 * The reference checkout of `npm run bench -- --against <git-ref>`: the ref built in a temporary git
 * worktree (detached, so no branch is made), with its own dependencies, its own `dist/` and its own
 * compiled contracts, so each of its processes runs the reference's code as that commit shipped it
 * (seeded with this checkout's build where that is the same files: seedFromThisBuild).
 * Its node_modules is this checkout's, linked, when the two lockfiles are the same (an install is a
 * minute or two of this machine's CPU); otherwise `npm install` installs the reference's own, as its
 * lockfile says (`npm ci` refuses a lockfile without other platforms' optional packages, as .ci/run notes).
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process'
import {
  cpSync,
  existsSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { promisify } from 'node:util'
import type { ArtifactSet } from '../../src/chain/artifacts.ts'
import type { deployDevContracts } from '../../src/dev/deploy.ts'
import { AGAINST_REUSE_BUILD, step } from './settings.ts'

const run = promisify(execFile)
const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..')

/** What a side of the comparison runs: its CLI, its job specs, its contracts and how it deploys them. */
export interface Side {
  /** `this checkout` or `<ref> (<commit>)`. */
  name: string
  /** The short commit the side runs. */
  commit: string
  bin: string
  jobsDir: string
  artifacts: ArtifactSet
  deploy: typeof deployDevContracts
}

export interface Reference extends Side {
  /** Removes the worktree (also called by the bench's cleanup, on Ctrl-C too). */
  remove(): Promise<void>
}

async function git(args: readonly string[], cwd = root): Promise<string> {
  const { stdout } = await run('git', args, { cwd, maxBuffer: 16 * 1024 * 1024 })
  return stdout.trim()
}

/** The commit `ref` names in this repository; a clear error when it names none. */
async function commitOf(ref: string): Promise<string> {
  try {
    return await git(['rev-parse', '--verify', '--quiet', `${ref}^{commit}`])
  } catch {
    throw new Error(
      `--against ${ref}: no commit of that name in this repository; give a commit, tag or branch (git log --oneline)`,
    )
  }
}

/**
 * Checks out `ref` in a temporary worktree and builds it. `onCreated` is given the worktree's removal
 * as soon as the worktree exists, so an interrupted build is cleaned up too.
 */
export async function prepareReference(
  ref: string,
  onCreated: (remove: () => Promise<void>) => void,
): Promise<Reference> {
  const commit = await commitOf(ref)
  const short = commit.slice(0, 7)
  const dir = mkdtempSync(join(tmpdir(), `feedrunner-against-${short}-`))
  const build = new BuildStep()
  let removing: Promise<void> | undefined
  const remove = () =>
    (removing ??= (async () => {
      await build.stop()
      await git(['worktree', 'remove', '--force', dir]).catch(() => undefined)
      rmSync(dir, { recursive: true, force: true })
      await git(['worktree', 'prune']).catch(() => undefined)
    })())
  onCreated(remove)
  step(`--against ${ref}: checking out ${short} in ${dir}`)
  await git(['worktree', 'add', '--detach', dir, commit])
  await installDependencies(dir, build)
  const artifactsModule = (await import(
    pathToFileURL(join(dir, 'dist/chain/artifacts.js')).href
  )) as {
    compileContracts: () => ArtifactSet
  }
  const deployModule = (await import(pathToFileURL(join(dir, 'dist/dev/deploy.js')).href)) as {
    deployDevContracts: typeof deployDevContracts
  }
  return {
    name: `${ref} (${short})`,
    commit: short,
    bin: join(dir, 'bin/feedrunner.js'),
    jobsDir: join(dir, 'jobs'),
    // Its own build compiled them into its own .cache/contracts; this reads them from there.
    artifacts: artifactsModule.compileContracts(),
    deploy: deployModule.deployDevContracts,
    remove,
  }
}

/**
 * The reference's install or build, in a process group of its own, so that an interrupted bench ends
 * it with everything it started (npm, its `prepare`, tsc) before the worktree is removed.
 */
class BuildStep {
  private child: ChildProcess | undefined

  run(command: string, args: readonly string[], cwd: string): Promise<void> {
    return new Promise((resolveRun, rejectRun) => {
      const child = spawn(command, args, { cwd, detached: true, stdio: ['ignore', 'pipe', 'pipe'] })
      this.child = child
      let output = ''
      const keep = (chunk: Buffer) => {
        output = (output + chunk.toString('utf8')).slice(-3_000)
      }
      child.stdout?.on('data', keep)
      child.stderr?.on('data', keep)
      child.once('error', rejectRun)
      child.once('exit', (code, signal) => {
        this.child = undefined
        if (code === 0) resolveRun()
        else
          rejectRun(
            new Error(
              `--against: ${command} ${args.join(' ')} in ${cwd} failed (${code ?? signal}):\n${output}`,
            ),
          )
      })
    })
  }

  /** Ends the running step and what it started; resolves once it has exited. */
  async stop(): Promise<void> {
    const child = this.child
    if (!child?.pid || child.exitCode !== null) return
    const exited = new Promise((resolveExit) => child.once('exit', resolveExit))
    try {
      process.kill(-child.pid, 'SIGKILL')
    } catch {
      return
    }
    await exited
  }
}

/** Links this checkout's node_modules when the lockfiles match, else installs; then builds. */
async function installDependencies(dir: string, build: BuildStep): Promise<void> {
  const lock = (at: string) => readFileSync(join(at, 'package-lock.json'), 'utf8')
  const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm'
  if (existsSync(join(root, 'node_modules')) && lock(dir) === lock(root)) {
    step('--against: the lockfiles match; linking node_modules and building the reference')
    symlinkSync(join(root, 'node_modules'), join(dir, 'node_modules'), 'dir')
    if (AGAINST_REUSE_BUILD) await seedFromThisBuild(dir)
    await build.run(process.execPath, [join(dir, 'bin/build.js')], dir)
  } else {
    // The install runs the reference's own `prepare` (its build).
    step('--against: the lockfiles differ; npm install in the reference (a minute or two)')
    await build.run(npm, ['install', '--no-audit', '--no-fund'], dir)
  }
  if (!existsSync(join(dir, 'dist/dev/deploy.js')))
    throw new Error(
      `--against: the reference's build left no dist/ in ${dir}; build it there by hand (node bin/build.js) to see why`,
    )
}

/** The sources and build settings a `dist/` is compiled from (with the compiler, in the lockfile). */
const BUILD_INPUTS = ['src', 'tsconfig.json', 'tsconfig.build.json', 'bin/build.js']

/**
 * Seeds the reference's build with this checkout's where the result is the same, so its `bin/build.js`
 * has less to do: the compiled contracts (their cache is keyed by the contracts' content and the
 * compiler, so a contract that differs still misses and is compiled), and `dist/` when the reference's
 * sources and build settings are this checkout's, committed, and `dist/` is built from them (tsc would
 * write the same files; the lockfiles match, so the same compiler). Its BUILD.json then records the
 * reference's own sources, which bin/build.js and bin/feedrunner.js compare by their files' times.
 */
async function seedFromThisBuild(dir: string): Promise<void> {
  const contracts = join(root, '.cache', 'contracts')
  if (existsSync(contracts))
    cpSync(contracts, join(dir, '.cache', 'contracts'), { recursive: true })
  const fingerprints = (await import(
    pathToFileURL(join(root, 'bin/source-fingerprint.js')).href
  )) as {
    sourceFingerprint: (srcDir: string) => string
    builtFingerprint: (distDir: string) => string | undefined
  }
  // A ref without one of these files has other build settings: it builds from nothing.
  const tree = (at: string) =>
    git(['rev-parse', ...BUILD_INPUTS.map((path) => `HEAD:${path}`)], at).catch(() => at)
  const built = fingerprints.sourceFingerprint(join(root, 'src'))
  const same =
    (await tree(dir)) === (await tree(root)) &&
    (await git(['status', '--porcelain', '--untracked-files=all', '--', ...BUILD_INPUTS])) === '' &&
    fingerprints.builtFingerprint(join(root, 'dist')) === built
  if (!same) return
  step('--against: the reference builds from the sources of this build; copying its dist/')
  try {
    cpSync(join(root, 'dist'), join(dir, 'dist'), { recursive: true })
    if (fingerprints.builtFingerprint(join(dir, 'dist')) !== built) throw new Error('rebuilt')
  } catch {
    // This checkout's dist/ was replaced under the copy (a build beside this one): build from nothing.
    rmSync(join(dir, 'dist'), { recursive: true, force: true })
    return
  }
  writeFileSync(
    join(dir, 'dist', 'BUILD.json'),
    `${JSON.stringify({ fingerprint: fingerprints.sourceFingerprint(join(dir, 'src')), copiedFrom: root }, null, 2)}\n`,
  )
}

/**
 * Builds this checkout's `dist/` when it is not built from `src/` as it is (bin/build.js leaves a
 * current build alone): `bin/feedrunner.js` runs the sources through tsx otherwise, whose loader costs
 * each process and each isolate tens of MB and its own CPU, and the reference runs compiled code.
 */
export async function buildThisCheckout(): Promise<void> {
  step('--against: building this checkout (nothing to do when dist/ is current)')
  await new BuildStep().run(process.execPath, [join(root, 'bin/build.js')], root)
}

/** This checkout as a side. */
export async function thisCheckout(artifacts: ArtifactSet): Promise<Side> {
  const { FEEDRUNNER_BIN } = await import('../../src/dev/feedrunner-process.ts')
  const { deployDevContracts } = await import('../../src/dev/deploy.ts')
  const commit = await git(['rev-parse', '--short=7', 'HEAD']).catch(() => 'unknown')
  const dirty = await git(['status', '--porcelain', '--untracked-files=no', '--', 'src', 'bin'])
    .then((out) => out !== '')
    .catch(() => false)
  return {
    name: `this checkout (${commit}${dirty ? ', with changes' : ''})`,
    commit,
    bin: FEEDRUNNER_BIN,
    jobsDir: join(root, 'jobs'),
    artifacts,
    deploy: deployDevContracts,
  }
}
