import { readFileSync } from 'node:fs'
import { parse as parseToml } from 'smol-toml'
import { SENSITIVE_SETTINGS, SETTING_PATTERNS, type Settings } from './settings.ts'

/**
 * Every secret value this process may hold, for the scrub (secret-scrub.ts): the sensitive settings,
 * the variables of the sensitive patterns (FEED_KEY_*), and the node keys in the variables a
 * CHAINS_FILE names in keys_env. A hex key is listed with and without its 0x too.
 */
export function secretValues(settings: Settings, env: NodeJS.ProcessEnv = process.env): string[] {
  const values: string[] = []
  for (const name of SENSITIVE_SETTINGS) {
    const value = settings[name] as string | readonly string[] | undefined
    values.push(...(typeof value === 'string' ? [value] : (value ?? [])))
  }
  for (const name of [...patternVariables(env), ...keysEnvNames(settings.CHAINS_FILE)]) {
    const value = env[name]?.trim()
    if (value) values.push(value)
  }
  // A hex key also leaks without its 0x.
  return [
    ...new Set(
      values.flatMap((value) =>
        /^0x[0-9a-fA-F]+$/.test(value) ? [value, value.slice(2)] : [value],
      ),
    ),
  ]
}

/** The variables set in `env` whose names match a sensitive pattern (`FEED_KEY_<NAME>`). */
function patternVariables(env: NodeJS.ProcessEnv): string[] {
  const patterns = SETTING_PATTERNS.filter((pattern) => pattern.sensitive).map(
    (pattern) => new RegExp(`^${pattern.pattern.replace(/<[A-Z]+>/g, '[A-Z0-9_]+')}$`),
  )
  return Object.keys(env).filter((name) => patterns.some((pattern) => pattern.test(name)))
}

/**
 * The variable names a CHAINS_FILE lists in its chains' keys_env, read leniently: a file that cannot
 * be read or parsed names none here (the runner reports it when it loads the chains).
 */
function keysEnvNames(file: string | undefined): string[] {
  if (!file) return []
  try {
    const document = parseToml(readFileSync(file, 'utf8')) as { chains?: unknown }
    if (!Array.isArray(document.chains)) return []
    return document.chains.flatMap((chain: unknown) => {
      const names = (chain as { keys_env?: unknown } | null)?.keys_env
      return Array.isArray(names)
        ? names.filter((name): name is string => typeof name === 'string')
        : []
    })
  } catch {
    return []
  }
}
