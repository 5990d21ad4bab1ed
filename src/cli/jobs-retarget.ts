import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { basename, join, resolve } from 'node:path'
import type { Command } from 'commander'
import { rootCauseFirst } from '../config/errors.ts'
import { withDevStack } from './dev-state.ts'
import { jobsFolders } from '../config/jobs-folders.ts'
import { settingsOrExit } from './lifecycle.ts'
import { renderTable } from './table.ts'

interface RetargetOptions {
  operator: string
  chainId?: string
  out: string
  json?: boolean
}

/** `feedrunner jobs retarget`: the specs moved to another chain and Operator, in one command. */
export function register(jobs: Command): void {
  jobs
    .command('retarget')
    .description(
      "Copies job specs into --out with another Operator and chain: contractAddress, the ethtx task's to and evmChainID (the rest, externalJobID included, unchanged)",
    )
    .argument('[files...]', 'spec files (default: every .toml in JOBS_DIR or jobs/)')
    .requiredOption('--operator <address>', 'the Operator the specs answer for')
    .option('--chain-id <id>', "the chain (default: RPC_URL's, asked of its node)")
    .requiredOption('--out <dir>', 'where the specs are written (created when missing)')
    .option('--json', 'print JSON alone on stdout')
    .action(async (files: string[], options: RetargetOptions) => {
      process.exitCode = await retarget(files, options)
    })
}

interface Moved {
  file: string
  job: string
  from: { operator: string; chainId: string | null }
  to: { operator: string; chainId: string }
}

async function retarget(files: readonly string[], options: RetargetOptions): Promise<number> {
  const settings = settingsOrExit(withDevStack().env)
  const { loadJobSpecFile, formatProblem } = await import('../pipeline/index.ts')
  const { getAddress, isAddress } = await import('ethers')
  try {
    if (!isAddress(options.operator))
      throw new Error(`--operator ${options.operator}: expected an address, 0x and 40 hex digits`)
    const operator = getAddress(options.operator)
    const chainId = await targetChain(options.chainId, settings.RPC_URL)
    const specs = files.length > 0 ? files : specFiles(settings.JOBS_DIR)
    if (specs.length === 0) throw new Error(`no job spec in ${settings.JOBS_DIR}`)
    mkdirSync(options.out, { recursive: true })
    const moved: Moved[] = []
    for (const file of specs) {
      const { job, problems } = await loadJobSpecFile(file)
      if (!job) throw new Error(problems.map(formatProblem).join('\n'))
      // Only a directrequest job names an Operator; the others move with the chain alone.
      if (job.spec.type !== 'directrequest') continue
      const target = join(options.out, basename(file))
      if (resolve(target) === resolve(file))
        throw new Error(`${file}: --out is the spec's own folder; give another`)
      const text = retargetText(
        readFileSync(file, 'utf8'),
        job.spec.contractAddress,
        operator,
        chainId,
      )
      writeFileSync(target, text)
      // What was written is checked as the runner will read it.
      const written = await loadJobSpecFile(target)
      if (
        written.job?.spec.type !== 'directrequest' ||
        written.job.spec.contractAddress !== operator
      )
        throw new Error(
          `${target}: the rewritten spec does not load as expected: ${written.problems.map(formatProblem).join('; ') || 'its contractAddress is not the new one'}`,
        )
      moved.push({
        file: target,
        job: job.spec.name,
        from: {
          operator: job.spec.contractAddress,
          chainId: job.spec.evmChainID === undefined ? null : String(job.spec.evmChainID),
        },
        to: { operator, chainId },
      })
    }
    if (options.json) console.log(JSON.stringify({ operator, chainId, specs: moved }, null, 2))
    else {
      console.log(
        renderTable(
          ['spec', 'job', 'Operator (was)', 'chain (was)'],
          moved.map((spec) => [
            spec.file,
            spec.job,
            spec.from.operator,
            spec.from.chainId ?? '(none)',
          ]),
        ),
      )
      console.log(
        `\n${moved.length} specs now answer for the Operator ${operator} on chain ${chainId}: JOBS_DIR=${options.out}`,
      )
    }
    return 0
  } catch (error) {
    console.error(rootCauseFirst(error))
    return 1
  }
}

/** The chain id: --chain-id, else RPC_URL's node's. */
async function targetChain(given: string | undefined, rpcUrl: string | undefined): Promise<string> {
  if (given !== undefined) {
    if (!/^[1-9][0-9]*$/.test(given)) throw new Error(`--chain-id ${given}: expected a chain id`)
    return given
  }
  if (!rpcUrl) throw new Error('give --chain-id, or set RPC_URL so its node says which chain')
  const { fetchChainId } = await import('../chain/provider.ts')
  return String(await fetchChainId(rpcUrl))
}

function specFiles(jobsDir: string): string[] {
  return jobsFolders(jobsDir).flatMap((dir) =>
    readdirSync(dir)
      .filter((name) => name.endsWith('.toml'))
      .sort()
      .map((name) => join(dir, name)),
  )
}

/**
 * The spec's text with the Operator and chain replaced, everything else as it was (comments, layout):
 * the contractAddress line, every other mention of the old Operator (the ethtx task's `to`), and the
 * evmChainID line, added after contractAddress when the spec had none.
 */
export function retargetText(
  text: string,
  oldOperator: string,
  operator: string,
  chainId: string,
): string {
  const chainLine = `evmChainID = "${chainId}"`
  let out = text.replace(/^(\s*contractAddress\s*=\s*)["'][^"'\n]*["']/m, `$1"${operator}"`)
  out = out.replace(new RegExp(oldOperator.slice(2), 'gi'), operator.slice(2))
  if (/^\s*evmChainID\s*=.*$/m.test(out)) out = out.replace(/^\s*evmChainID\s*=.*$/m, chainLine)
  else out = out.replace(/^(\s*contractAddress\s*=.*)$/m, `$1\n${chainLine}`)
  return out
}
