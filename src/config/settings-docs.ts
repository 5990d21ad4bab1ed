import {
  SETTING_PATTERNS,
  SETTINGS,
  type SettingGroup,
  type SettingInfo,
  type SettingName,
} from './settings.ts'

/**
 * `docs/configuration.md` and `.env.example`, rendered from the settings schema: both say what the
 * schema says, and test/config/settings-docs.test.ts fails when a checked-in copy is stale
 * (`npm run docs:config` writes them).
 */

const GROUP_TITLES: Record<SettingGroup, string> = {
  logging: 'Logging',
  redis: 'Redis (queues, run records)',
  chain: 'Chain (job runner, fulfilments)',
  feeds: 'Data Feed Query Service and its key (##signKey)',
  fetch: 'Upstream calls (fetch workers)',
  adapter: 'Adapter',
  'feed-service': 'Local feed service (`feedrunner feeds serve`)',
  dev: 'Dev commands (`feedrunner request`)',
  operations: 'Operations (outages, metrics, health, dashboard)',
  bounds: 'Bounds on requesters and sources (docs/security.md)',
}

const GROUPS = Object.keys(GROUP_TITLES) as SettingGroup[]

const EA_SETTINGS_URL =
  'https://github.com/smartcontractkit/ea-framework-js/blob/main/docs/reference-tables/ea-settings.md'

function settingsOf(group: SettingGroup): Array<[SettingName, SettingInfo]> {
  return (Object.entries(SETTINGS) as Array<[SettingName, SettingInfo]>).filter(
    ([, info]) => info.group === group,
  )
}

function defaultCell(info: SettingInfo): string {
  if (info.default !== undefined) return `\`${info.default}\``
  return `unset: ${info.whenUnset ?? 'off'}`
}

function escapeCell(text: string): string {
  return text.replace(/\|/g, '\\|')
}

export function renderConfigurationDoc(): string {
  const lines = [
    '<!-- Generated from src/config/settings-declared.ts by `npm run docs:config`; do not edit. -->',
    '',
    '# Configuration',
    '',
    'feedrunner reads its settings from the environment, then from a `.env` file in the working directory',
    '(`cp .env.example .env`): a variable set in the environment wins over the same one in `.env`. An empty',
    'value counts as unset, so the setting takes its default.',
    '',
    'Every setting is checked when a process starts, before it connects to anything: a wrong value stops',
    'the start with one line per problem, naming the variable and what is wrong. The value of a',
    'sensitive setting is never printed (nor logged: the logger removes it from every line), and a URL',
    'only as its host and port, since a path or query may carry an API key. A variable whose name is',
    "close to a setting's but is none (`NODE_PRIVATEKEY`) stops the start as well, naming the setting it",
    'meant, since that setting was never read. Processes that serve (`start`, `adapter`, `worker`,',
    '`runner`) then check what their parts need (chains, keys, job specs) and wait up to',
    '`REDIS_START_WAIT_MS` for Redis, all before a port opens; a port setting that is taken is named.',
    '',
    'Each process reads the settings once, in its composition root (`src/cli/`), and hands each part',
    'what it needs. This page and `.env.example` are generated from the one schema',
    '(`src/config/settings-declared.ts`): `npm run docs:config` rewrites both, and a test fails when',
    'either is stale.',
    '',
  ]
  for (const group of GROUPS) {
    const settings = settingsOf(group)
    const patterns = SETTING_PATTERNS.filter((pattern) => pattern.group === group)
    if (settings.length === 0 && patterns.length === 0) continue
    lines.push(`## ${GROUP_TITLES[group]}`, '')
    lines.push('| setting | default | unit | description |', '|---|---|---|---|')
    for (const [name, info] of settings) {
      const description = `${info.sensitive ? '**Sensitive.** ' : ''}${info.description}`
      lines.push(
        `| \`${name}\` | ${escapeCell(defaultCell(info))} | ${info.unit ?? ''} | ${escapeCell(description)} |`,
      )
    }
    for (const pattern of patterns) {
      const description = `${pattern.sensitive ? '**Sensitive.** ' : ''}${pattern.description}`
      lines.push(`| \`${pattern.pattern}\` | unset | | ${escapeCell(description)} |`)
    }
    lines.push('')
  }
  lines.push(
    '## The EA framework',
    '',
    'The adapter runs on `@chainlink/external-adapter-framework`, which reads settings of its own from the same',
    'environment: `EA_MODE`, `CACHE_TYPE` (`local` or `redis`), `CACHE_REDIS_URL` (else `REDIS_URL`),',
    '`CACHE_MAX_ITEMS`, `METRICS_ENABLED`, `METRICS_PORT`, `RATE_LIMIT_*` and more. They are listed, with their',
    `defaults, in the framework's [settings reference](${EA_SETTINGS_URL}); feedrunner gives \`EA_HOST\` and \`EA_PORT\` the`,
    "defaults above, and lists `METRICS_PORT` above with the framework's default since it is a port the",
    "adapter's process takes. The framework checks its own settings when the adapter starts.",
    '',
  )
  return lines.join('\n')
}

/** Wraps a comment to lines of at most `width` characters, each starting with `# `. */
function comment(text: string, width = 100): string[] {
  const lines: string[] = []
  let line = '#'
  for (const word of text.split(/\s+/)) {
    if (line.length + word.length + 1 > width && line !== '#') {
      lines.push(line)
      line = '#'
    }
    line += ` ${word}`
  }
  lines.push(line)
  return lines
}

export function renderEnvExample(): string {
  const lines = [
    '# feedrunner settings, generated from src/config/settings-declared.ts by `npm run docs:config`.',
    '# Copy to .env (never commit it), then uncomment and fill in what the parts you run need: as',
    '# copied it sets nothing, so every default applies. feedrunner reads .env from its working',
    '# directory, and a variable set in the environment wins over the file. Every variable is checked',
    '# at start; a wrong value names the variable. The manual: docs/configuration.md.',
    '',
  ]
  for (const group of GROUPS) {
    const settings = settingsOf(group)
    const patterns = SETTING_PATTERNS.filter((pattern) => pattern.group === group)
    if (settings.length === 0 && patterns.length === 0) continue
    lines.push(`# --- ${GROUP_TITLES[group]}`)
    for (const [name, info] of settings) {
      const unit = info.unit && info.unit !== 'URL' ? ` Unit: ${info.unit}.` : ''
      const unset = info.default === undefined ? ` Unset: ${info.whenUnset ?? 'off'}.` : ''
      lines.push(
        ...comment(`${info.sensitive ? 'SECRET. ' : ''}${info.description}${unit}${unset}`),
      )
      // Commented out: a copy changes nothing until a line is uncommented (RPC_URL and CHAINS_FILE
      // both set, as examples, stopped every start).
      if (info.default !== undefined) lines.push(`# ${name}=${info.default}`)
      else if (info.example !== undefined) lines.push(`# ${name}=${info.example}`)
      else lines.push(`# ${name}=`)
    }
    for (const pattern of patterns) {
      lines.push(...comment(`${pattern.sensitive ? 'SECRET. ' : ''}${pattern.description}`))
      lines.push(`# ${pattern.example}`)
    }
    lines.push('')
  }
  lines.push(
    "# --- The EA framework's own settings (EA_MODE, CACHE_TYPE, METRICS_ENABLED, ...) apply to the adapter:",
    `# ${EA_SETTINGS_URL}`,
    '',
  )
  return lines.join('\n')
}

/** Where the generated files live, relative to the repository root. */
export const GENERATED_CONFIG_FILES = {
  'docs/configuration.md': renderConfigurationDoc,
  '.env.example': renderEnvExample,
} as const
