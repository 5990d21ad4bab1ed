// The Node.js lines feedrunner runs on: 22 and 24 (package.json's `engines`), and those after them.
// Checked before anything else starts: on Node.js 20 the sources load in the main thread through tsx,
// but the task isolation threads cannot load them ("Unknown file extension .ts"), so every request
// would be quarantined, each after two crashes of its run.
export const OLDEST_SUPPORTED_MAJOR = 22

/** Why this Node.js cannot run feedrunner, with the remedy; undefined when it can. */
export function unsupportedNode(version = process.version, execPath = process.execPath) {
  const major = Number(/^v?(\d+)\./.exec(version)?.[1] ?? Number.NaN)
  if (major >= OLDEST_SUPPORTED_MAJOR) return undefined
  return (
    `feedrunner runs on Node.js 22 and 24 (package.json "engines"), and this is Node.js ${version} ` +
    `(${execPath}): on Node.js before ${OLDEST_SUPPORTED_MAJOR} its task isolation threads cannot load its ` +
    `sources, and every request would be quarantined. Install Node.js 22 or 24 (https://nodejs.org, or ` +
    `a version manager: nvm install 22) and run the command again.`
  )
}
