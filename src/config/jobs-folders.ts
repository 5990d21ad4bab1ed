import { resolve } from 'node:path'

/**
 * The folders JOBS_DIR names: one folder, or several separated by commas (the dev stack runs
 * `jobs,jobs/push`: the request specs and the push jobs of the contracts it deploys). Each once,
 * in the order given; a folder's own subfolders are not read.
 */
export function jobsFolders(jobsDir: string): string[] {
  const folders = jobsDir
    .split(',')
    .map((folder) => folder.trim())
    .filter(Boolean)
  const seen = new Set<string>()
  return folders.filter((folder) => !seen.has(resolve(folder)) && seen.add(resolve(folder)))
}
