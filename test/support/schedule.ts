import { parseSchedule, type CronSchedule } from '../../src/pipeline/index.ts'

/** A schedule a test writes, parsed; one that does not parse fails the test with its problem. */
export function scheduleOf(text: string): CronSchedule {
  const parsed = parseSchedule(text)
  if ('problem' in parsed) throw new Error(parsed.problem)
  return parsed.schedule
}
