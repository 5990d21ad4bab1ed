// Loaded with --import (a process's NODE_OPTIONS, or a worker thread's execArgv): appends every module
// URL the thread loads to MODULE_TRACE as it loads it, so a thread that is ended, not exited, has
// said what it loaded too.
import { registerHooks } from 'node:module'
import { appendFileSync } from 'node:fs'

registerHooks({
  load(url, context, nextLoad) {
    appendFileSync(process.env.MODULE_TRACE, `${url}\n`)
    return nextLoad(url, context)
  },
})
