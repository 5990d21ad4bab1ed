import { createHash } from 'node:crypto'
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  readFileSync,
  readdirSync,
  renameSync,
  writeFileSync,
} from 'node:fs'
import { createRequire } from 'node:module'
import { homedir } from 'node:os'
import { dirname, isAbsolute, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { FeedrunnerError } from '../config/errors.ts'

/** ABI and creation bytecode of one compiled contract. */
export interface ContractArtifact {
  contractName: string
  sourceName: string
  abi: readonly unknown[]
  bytecode: `0x${string}`
}

export type ArtifactSet = Record<string, ContractArtifact>

const projectRoot = resolve(dirname(fileURLToPath(import.meta.url)), '../..')
const require = createRequire(import.meta.url)

/** Where compiled contracts are kept, keyed by their sources (git ignores it; `npm run build` fills it). */
export const CONTRACTS_CACHE_DIR = join(projectRoot, '.cache', 'contracts')

/**
 * Compiled contracts kept for every checkout of this user, outside each one (`$XDG_CACHE_HOME`, else
 * `~/.cache`): a second clone or worktree of the same sources reads them instead of compiling for
 * 40-50 s. Same key as the checkout's own cache (the sources' content, solc's version, its settings).
 */
export function sharedContractsCacheDir(env: NodeJS.ProcessEnv = process.env): string {
  return join(env.XDG_CACHE_HOME || join(homedir(), '.cache'), 'feedrunner', 'contracts')
}

/** solc-js as a standard-JSON compiler: input and output are JSON strings. */
interface Solc {
  compile(input: string): string
}

/**
 * One solc-js release, installed under an npm alias that names its exact version (`solc-0.8.19`,
 * `solc-0.6.6`): Chainlink's sources pin the compiler line they were written for. The version is part
 * of the cache key and comes from the alias, not the package: solc is a dev dependency, and an
 * install without them (the image, `npm prune --omit=dev`) still finds the contracts the build
 * compiled. solc-js takes ~100 MB once loaded, so it is loaded only when the cache has no build.
 */
export interface SolcRelease {
  readonly packageName: string
  readonly version: string
  load(): Solc
}

function solcRelease(packageName: `solc-${string}`): SolcRelease {
  return {
    packageName,
    version: packageName.slice('solc-'.length),
    load: () => {
      try {
        return require(packageName) as Solc
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'MODULE_NOT_FOUND') throw error
        throw new FeedrunnerError(
          `the Solidity compiler ${packageName} is not installed (a dev dependency) and ${CONTRACTS_CACHE_DIR} has no build of these sources: install with the dev dependencies (npm install), which compiles them`,
          { kind: 'config' },
        )
      }
    },
  }
}

/** What Operator.sol pins (exactly 0.8.19), and the project's own contracts. */
export const SOLC_0_8 = solcRelease('solc-0.8.19')
/** Chainlink's v0.6 contracts (FluxAggregator): `pragma solidity 0.6.6`. */
export const SOLC_0_6 = solcRelease('solc-0.6.6')

/** Chainlink's own contracts, compiled from `@chainlink/contracts` as published (never copied). */
export const CHAINLINK_SOURCES = [
  '@chainlink/contracts/src/v0.8/shared/token/ERC677/LinkToken.sol',
  '@chainlink/contracts/src/v0.8/operatorforwarder/Operator.sol',
  '@chainlink/contracts/src/v0.8/operatorforwarder/AuthorizedForwarder.sol',
] as const

/**
 * Chainlink's FluxAggregator, from the last `@chainlink/contracts` line that publishes its v0.6
 * sources (0.8.0, under an npm alias beside the 1.x package), compiled with solc 0.6.6.
 */
export const FLUX_SOURCES = ['@chainlink/contracts-0.8.0/src/v0.6/FluxAggregator.sol'] as const

/** FluxAggregator and what it imports, compiled (or read from the cache) with the solc its pragma names. */
export function fluxArtifacts(progress?: (line: string) => void): ArtifactSet {
  return compileContracts([...FLUX_SOURCES], undefined, progress, SOLC_0_6)
}

/** The project's own Solidity, `contracts/**\/*.sol`, as source unit names relative to the root. */
export function projectSources(dir = join(projectRoot, 'contracts')): string[] {
  if (!existsSync(dir)) return []
  return readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .filter((file) => file.endsWith('.sol'))
    .sort()
    .map((file) => `contracts/${file.split('\\').join('/')}`)
}

/**
 * Maps a Solidity import to a file: project files, then packages. `@openzeppelin/contracts@4.8.3/x`
 * is how Chainlink names the npm alias `@openzeppelin/contracts-4.8.3`.
 */
export function resolveImport(unitName: string): string {
  if (isAbsolute(unitName)) return unitName
  if (unitName.startsWith('contracts/')) return join(projectRoot, unitName)
  const aliased = unitName.replace(/^(@openzeppelin\/contracts)@(\d+\.\d+\.\d+)\//, '$1-$2/')
  const [scopeOrName, ...rest] = aliased.split('/')
  const packageName = scopeOrName?.startsWith('@') ? `${scopeOrName}/${rest.shift()}` : scopeOrName
  const packageJson = require.resolve(`${packageName}/package.json`, { paths: [projectRoot] })
  return join(dirname(packageJson), ...rest)
}

function readSource(unitName: string): string {
  return readFileSync(resolveImport(unitName), 'utf8')
}

interface SolcOutput {
  errors?: Array<{ severity: string; formattedMessage: string }>
  contracts: Record<
    string,
    Record<string, { abi: unknown[]; evm: { bytecode: { object: string } } }>
  >
}

/**
 * Compiles the given source units with `solc` (by default 0.8.19, the version Operator.sol pins) and returns every
 * contract that has bytecode. Results are cached under `.cache/contracts`, keyed by the content of
 * every file that took part, so an edited source is rebuilt and an unchanged one costs a file read,
 * and in the user's shared cache (sharedContractsCacheDir), where another checkout finds them.
 * A cache miss prints a progress line through `progress` (stderr by default).
 */
export function compileContracts(
  entryUnits: readonly string[] = [...CHAINLINK_SOURCES, ...projectSources()],
  cacheDir = CONTRACTS_CACHE_DIR,
  progress: (line: string) => void = (line) => process.stderr.write(`${line}\n`),
  solc: SolcRelease = SOLC_0_8,
  // A caller with a cache of its own (a test) gets that cache alone.
  sharedDir: string | undefined = cacheDir === CONTRACTS_CACHE_DIR
    ? sharedContractsCacheDir()
    : undefined,
): ArtifactSet {
  const sources = collectSources(entryUnits)
  const fingerprint = createHash('sha256')
    .update(solc.version)
    .update(JSON.stringify(SOLC_SETTINGS))
  for (const [unit, content] of [...sources].sort(([a], [b]) => a.localeCompare(b)))
    fingerprint.update(unit).update('\0').update(content)
  const cacheName = `${fingerprint.digest('hex').slice(0, 32)}.json`
  const cacheFile = join(cacheDir, cacheName)
  if (existsSync(cacheFile)) return JSON.parse(readFileSync(cacheFile, 'utf8')) as ArtifactSet
  const shared = sharedDir === undefined ? undefined : join(sharedDir, cacheName)
  if (shared !== undefined && existsSync(shared)) {
    const artifacts = JSON.parse(readFileSync(shared, 'utf8')) as ArtifactSet
    progress(`${entryUnits.length} Solidity source(s) compiled before, read from ${sharedDir}`)
    keep(cacheFile, cacheDir, cacheName, progress, (file) => copyFileSync(shared, file))
    return artifacts
  }

  const artifacts = compile(entryUnits, sources, cacheDir, progress, solc)
  const json = JSON.stringify(artifacts)
  keep(cacheFile, cacheDir, cacheName, progress, (file) => writeFileSync(file, json))
  if (sharedDir !== undefined)
    keep(shared!, sharedDir, cacheName, progress, (file) => writeFileSync(file, json))
  return artifacts
}

/** What every compile asks of solc, part of the cache key. */
const SOLC_SETTINGS = {
  optimizer: { enabled: true, runs: 200 },
  outputSelection: { '*': { '*': ['abi', 'evm.bytecode.object'] } },
}

function compile(
  entryUnits: readonly string[],
  sources: Map<string, string>,
  cacheDir: string,
  progress: (line: string) => void,
  solc: SolcRelease,
): ArtifactSet {
  const input = {
    language: 'Solidity',
    sources: Object.fromEntries([...sources].map(([unit, content]) => [unit, { content }])),
    settings: SOLC_SETTINGS,
  }
  // A cold compile takes 4-5 s here (20 s on a loaded machine): say so rather than sit silent.
  // `npm install` compiles ahead (bin/build.js), so a first `npm start` normally reads the cache.
  const started = Date.now()
  progress(
    `compiling ${entryUnits.length} Solidity source(s) (${sources.size} files with imports) with solc ${solc.version}; once, then cached in ${cacheDir}`,
  )
  const output = JSON.parse(solc.load().compile(JSON.stringify(input))) as SolcOutput
  const errors = (output.errors ?? []).filter((error) => error.severity === 'error')
  if (errors.length > 0)
    throw new Error(
      `Solidity compilation failed:\n${errors.map((e) => e.formattedMessage).join('\n')}`,
    )

  const artifacts: ArtifactSet = {}
  for (const [sourceName, contracts] of Object.entries(output.contracts)) {
    for (const [contractName, compiled] of Object.entries(contracts)) {
      if (!compiled.evm.bytecode.object) continue
      artifacts[contractName] = {
        contractName,
        sourceName,
        abi: compiled.abi,
        bytecode: `0x${compiled.evm.bytecode.object}`,
      }
    }
  }
  progress(`compiled in ${((Date.now() - started) / 1000).toFixed(1)} s`)
  return artifacts
}

/**
 * Writes a cache file whole or not at all (written aside, then renamed: two checkouts installing at
 * once may write the same shared file). A cache that cannot be written is said, not fatal.
 */
function keep(
  file: string,
  dir: string,
  name: string,
  progress: (line: string) => void,
  write: (file: string) => void,
): void {
  try {
    mkdirSync(dir, { recursive: true })
    const aside = join(dir, `${name}.${process.pid}.tmp`)
    write(aside)
    renameSync(aside, file)
  } catch (error) {
    // A read-only install (a container's root filesystem) still runs; it compiles on every start.
    progress(
      `could not cache the compiled contracts in ${dir} (${(error as NodeJS.ErrnoException).code ?? String(error)}): the next start compiles them again; build them ahead with \`npm run build\``,
    )
  }
}

/** Reads every entry unit and, transitively, everything it imports. */
function collectSources(entryUnits: readonly string[]): Map<string, string> {
  const sources = new Map<string, string>()
  const pending = [...entryUnits]
  while (pending.length > 0) {
    const unit = pending.pop() as string
    if (sources.has(unit)) continue
    const content = readSource(unit)
    sources.set(unit, content)
    for (const match of content.matchAll(/^\s*import\s+(?:[^'"]*?\s+from\s+)?["']([^"']+)["']/gm)) {
      const imported = match[1] as string
      pending.push(
        imported.startsWith('.') ? normalizeUnit(join(dirname(unit), imported)) : imported,
      )
    }
  }
  return sources
}

function normalizeUnit(path: string): string {
  return path.split('\\').join('/')
}

/** An artifact by contract name, or an error that lists what was compiled. */
export function artifact(artifacts: ArtifactSet, name: string): ContractArtifact {
  const found = artifacts[name]
  if (!found)
    throw new Error(
      `No compiled contract named ${name}; compiled: ${Object.keys(artifacts).sort().join(', ')}`,
    )
  return found
}
