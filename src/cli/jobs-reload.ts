import type { Logger } from '../config/logger.ts'
import { watchJobsDir } from '../runner/jobs-watch.ts'
import type { Runners } from '../runner/start.ts'
import type { RunningPart } from './lifecycle.ts'

/**
 * Jobs that change while a runner runs: JOBS_DIR is watched, and SIGHUP reloads it too (where a
 * folder's events do not arrive: a network file system, some container mounts). What the running
 * jobs became is published for `request` in other processes.
 */
export function watchRunnerJobs(runners: Runners, dir: string, logger: Logger): RunningPart {
  const watcher = watchJobsDir({
    dir,
    reload: () => runners.reloadJobs(),
    log: logger.child({ part: 'jobs' }),
    onReload: (refused) => runners.jobsRefused(refused),
  })
  const onHangup = () => void watcher.reload('SIGHUP')
  process.on('SIGHUP', onHangup)
  return {
    name: 'jobs watch',
    close: async () => {
      process.off('SIGHUP', onHangup)
      watcher.close()
    },
  }
}
