import { spawnSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'

/** A place a keys command writes to: a file, or a folder it writes files into. */
export interface KeyPlace {
  path: string
  folder?: boolean
}

/**
 * What a command that writes keys says before it writes them where git would commit them (inside a
 * git work tree, not ignored), or undefined. A keystore with its password file beside it in a
 * checkout went in with the next `git add -A`. Git itself decides (every .gitignore, info/exclude,
 * the global excludes); without git, or outside a work tree, there is nothing to say.
 */
export function commitWarning(places: readonly KeyPlace[]): string | undefined {
  const exposed = places.filter((place) =>
    // A file the folder will hold: git's rules for a folder (`keys/`) apply to what is in it.
    committable(place.folder ? join(place.path, 'UTC--keystore') : place.path),
  )
  if (exposed.length === 0) return undefined
  const root = workTreeOf(exposed[0]!.path)
  const shown = exposed.map(
    (place) => `${relative(root, resolve(place.path)) || '.'}${place.folder ? '/' : ''}`,
  )
  const them = shown.length > 1 ? 'them' : 'it'
  return (
    `${shown.join(' and ')} ${shown.length > 1 ? 'are' : 'is'} in the git checkout ${root} and not ignored: ` +
    `git add -A would commit ${them}. Keep keys out of git: add ${shown.map((path) => `/${path}`).join(' and ')} ` +
    `to ${join(root, '.gitignore')}, or write ${them} outside the checkout (--dir, --password-file, --out)`
  )
}

function committable(path: string): boolean {
  const absolute = resolve(path)
  const ran = spawnSync('git', ['check-ignore', '-q', '--', absolute], {
    cwd: nearestExisting(dirname(absolute)),
    stdio: 'ignore',
  })
  // 0: ignored; 1: not ignored; 128: not in a work tree. No git at all sets `error`.
  return ran.error === undefined && ran.status === 1
}

function workTreeOf(path: string): string {
  const ran = spawnSync('git', ['rev-parse', '--show-toplevel'], {
    cwd: nearestExisting(dirname(resolve(path))),
    encoding: 'utf8',
  })
  return ran.stdout.trim()
}

function nearestExisting(dir: string): string {
  let at = dir
  while (!existsSync(at) && dirname(at) !== at) at = dirname(at)
  return at
}
