/** A JSON log line of a feedrunner process, with the fields the outage tests read. */
export interface LogLine {
  level?: number
  msg?: string
  dependency?: string
  setting?: string
  endpoint?: string
  state?: string
  reason?: string
  failures?: number
  downMs?: number
}

/** The JSON lines of a process's output (LOG_FORMAT=json); other lines are skipped. */
export function jsonLogLines(output: string): LogLine[] {
  return output
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as LogLine)
}
