import type { PipelineTask } from './schema.ts'
import type { SpecProblem } from './problems.ts'

/** Kahn's algorithm, taking ready tasks in declaration order; a cycle is reported with its path. */
export function topologicalOrder(
  tasks: PipelineTask[],
  file: string,
  problems: SpecProblem[],
): PipelineTask[] | undefined {
  const byId = new Map(tasks.map((task) => [task.id, task]))
  const done = new Set<string>()
  const ordered: PipelineTask[] = []
  while (ordered.length < tasks.length) {
    const ready = tasks.find(
      (task) => !done.has(task.id) && task.dependsOn.every((id) => done.has(id)),
    )
    if (!ready) {
      const cycle = findCycle(
        tasks.filter((task) => !done.has(task.id)),
        byId,
      )
      const first = byId.get(cycle[0] ?? '')
      problems.push({
        file,
        line: first?.line,
        task: first?.id,
        message: `tasks form a cycle: ${cycle.join(' -> ')}`,
      })
      return undefined
    }
    done.add(ready.id)
    ordered.push(ready)
  }
  return ordered
}

function findCycle(remaining: PipelineTask[], byId: ReadonlyMap<string, PipelineTask>): string[] {
  const start = remaining[0]
  if (!start) return []
  const path: string[] = []
  let current: PipelineTask | undefined = start
  while (current && !path.includes(current.id)) {
    path.push(current.id)
    const next: string | undefined = current.dependsOn.find((id) =>
      remaining.some((task) => task.id === id),
    )
    current = next === undefined ? undefined : byId.get(next)
  }
  if (!current) return path
  // Walked backwards along dependencies; show it in the direction data flows.
  return [...path.slice(path.indexOf(current.id)), current.id].reverse()
}
