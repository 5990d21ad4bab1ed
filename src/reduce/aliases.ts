/**
 * Field aliases: the feed service's documents and samples spell some fields differently
 * (`windGust`/`windgust`). A caller passes either a map canonical -> aliases (the catalog's shape)
 * or a function name -> equivalent names; both become one resolver.
 */
export type AliasMap = Readonly<Record<string, readonly string[]>>
export type AliasFunction = (name: string) => readonly string[]
export type Aliases = AliasMap | AliasFunction
export type AliasResolver = (name: string) => readonly string[]

const none: AliasResolver = () => []

/** Turns a map (canonical -> aliases, read in both directions) or a function into a resolver. */
export function aliasResolver(aliases: Aliases | undefined): AliasResolver {
  if (aliases === undefined) return none
  if (typeof aliases === 'function')
    return (name) => aliases(name).filter((other) => other !== name)
  const groups = new Map<string, string[]>()
  for (const [canonical, others] of Object.entries(aliases)) {
    const group = [canonical, ...others]
    for (const name of group) {
      const existing = groups.get(name) ?? []
      for (const other of group)
        if (other !== name && !existing.includes(other)) existing.push(other)
      groups.set(name, existing)
    }
  }
  return (name) => groups.get(name) ?? []
}

/** The value of `key` in `object`, or of the first alias of `key` the object has. */
export function lookupWithAliases(
  object: Readonly<Record<string, unknown>>,
  key: string,
  resolve: AliasResolver,
): { found: true; value: unknown } | { found: false } {
  if (Object.hasOwn(object, key)) return { found: true, value: object[key] }
  for (const other of resolve(key)) {
    if (Object.hasOwn(object, other)) return { found: true, value: object[other] }
  }
  return { found: false }
}

/**
 * A copy of `json` in which every object also carries the missing twins of its aliased keys,
 * so a general JSONPath expression (wildcards, slices) can name either spelling.
 */
export function withAliasTwins(
  json: unknown,
  resolve: AliasResolver,
  /** Called for each value copied (a path's budget counts them). */
  visit: () => void = () => undefined,
  depth = 0,
): unknown {
  if (depth > 64) return json
  if (Array.isArray(json)) {
    visit()
    return json.map((item) => withAliasTwins(item, resolve, visit, depth + 1))
  }
  if (json === null || typeof json !== 'object') return json
  visit()
  const source = json as Record<string, unknown>
  const copy: Record<string, unknown> = {}
  for (const [key, value] of Object.entries(source))
    copy[key] = withAliasTwins(value, resolve, visit, depth + 1)
  for (const key of Object.keys(source)) {
    for (const other of resolve(key)) if (!Object.hasOwn(copy, other)) copy[other] = copy[key]
  }
  return copy
}
