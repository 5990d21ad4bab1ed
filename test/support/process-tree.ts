import { readdirSync, readFileSync } from 'node:fs'

/** The PIDs of `root`'s descendants now, from /proc (parent id is field 4 of /proc/<pid>/stat). */
export function descendants(root: number): number[] {
  const parents = new Map<number, number>()
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8')
      parents.set(Number(entry), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]))
    } catch {
      // gone meanwhile
    }
  }
  const found: number[] = []
  const queue = [root]
  while (queue.length > 0) {
    const parent = queue.shift()!
    for (const [pid, ppid] of parents)
      if (ppid === parent && !found.includes(pid)) {
        found.push(pid)
        queue.push(pid)
      }
  }
  return found
}

export function alive(pid: number): boolean {
  // A zombie has exited; only its parent's wait is missing.
  try {
    return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'))
  } catch {
    return false
  }
}
