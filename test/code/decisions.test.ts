import { readdirSync, readFileSync, statSync } from 'node:fs'
import { join, relative } from 'node:path'
import { describe, expect, it } from 'vitest'

const ROOT = join(import.meta.dirname, '../..')
const FATE = 'src/chain/request-fate.ts'

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name)
    if (statSync(path).isDirectory()) return sourceFiles(path)
    return name.endsWith('.ts') ? [path] : []
  })
}

/** A file's code without its comments: a comment may name what it does not decide. */
function codeOf(path: string): string {
  return readFileSync(join(ROOT, path), 'utf8')
    .replace(/\/\*[\s\S]*?\*\//g, '')
    .replace(/^\s*\/\/.*$/gm, '')
}

/** Each file of src/ (its path from the root) whose code matches `pattern`, outside `allowed`. */
function filesMatching(pattern: RegExp, allowed: readonly string[]): string[] {
  return sourceFiles(join(ROOT, 'src'))
    .map((path) => relative(ROOT, path))
    .filter((path) => !allowed.includes(path))
    .filter((path) => pattern.test(codeOf(path)))
}

/**
 * A request's fate (open, answered, cancelled, past its cancelExpiration) is decided in one module,
 * from the chain, with one bounded log reader: a second decider is a second place to change when a
 * job type or a rule comes. operator.ts declares the events and the Operator's words; the listener
 * reads cancels as it reads requests (its own range read, by block hash), and delivers them.
 */
describe('one place per decision: a request fate', () => {
  it('reads whether a request is closed (OracleResponse) only in the fate module', () => {
    expect(filesMatching(/ORACLE_RESPONSE_TOPIC/, [FATE, 'src/chain/operator.ts'])).toEqual([])
  })

  it('tells an Operator that no longer knows a request only in the fate module', () => {
    expect(
      filesMatching(/ALREADY_FULFILLED_REASON|['"`]Must have a valid requestId/, [
        FATE,
        'src/chain/operator.ts',
      ]),
    ).toEqual([])
  })

  it('compares a cancelExpiration with a time only in the fate module', () => {
    expect(
      filesMatching(/[<>]=?\s*[\w.]*cancelExpiration\b|\bcancelExpiration\s*[<>]/, [FATE]),
    ).toEqual([])
  })

  it('pairs a cancel with its request only in the fate module', () => {
    expect(filesMatching(/kind === 'cancel'\)/, [FATE])).toEqual([])
  })

  it('reads Operator logs over block ranges only through the paged reader', () => {
    // The listener's range read (chain-reader.ts), a request read by its block's hash
    // (request-log.ts), the flux monitor's read of its aggregators' NewRound logs (no Operator's), a
    // cron firing's read of its ticks' ValuePushed logs and the dev stack's own tools are the other
    // readers of logs.
    expect(
      filesMatching(/\.getLogs\(/, [
        'src/chain/operator-logs.ts',
        'src/chain/listener/chain-reader.ts',
        'src/chain/request-log.ts',
        'src/runner/flux/monitor.ts',
        'src/runner/tick-chain.ts',
        'src/dev/requests.ts',
        'src/dev/requests-mined.ts',
      ]),
    ).toEqual([])
    expect(filesMatching(/readLogsInRanges\(/, [FATE, 'src/chain/operator-logs.ts'])).toEqual([])
  })
})

/**
 * An error is told by its kind (FeedrunnerError's kind, a class, a library's code), where it arises;
 * a decision never reads its words, which a library may reword in any release. Redis's reply errors
 * are the exception: the protocol makes their first word the code (NOSCRIPT, READONLY, OOM).
 */
describe('one place per decision: an error is told by its kind, not its words', () => {
  it('matches no pattern against an error message to decide', () => {
    const readsWords =
      /\/[^/\n]+\/\.test\((?:error|err|reason|cause)\b|\.test\((?:error|err|cause)\??\.message\)|\b(?:error|err)\??\.message\??\.(?:includes|startsWith|endsWith|match)\(/
    expect(filesMatching(readsWords, ['src/queue/lua-script.ts'])).toEqual([])
  })
})
