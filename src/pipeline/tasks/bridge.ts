import { errorKindOf, FeedrunnerError } from '../../config/errors.ts'
import { bridgeUrl } from '../../config/settings.ts'
import { parseBoolText } from '../literals.ts'
import { TaskError, type TaskDefinition } from '../task.ts'
import { isPlainObject, toJsonText } from '../values.ts'
import {
  adapterErrorMessage,
  exchange,
  isRetryableStatus,
  redactUrl,
  statusKind,
} from './http-client.ts'
import { responseCap } from './response-cap.ts'

/**
 * bridge(name, requestData): POSTs requestData to the bridge's URL (BRIDGE_<NAME>_URL) as Chainlink
 * does: the requestData object itself, plus `meta` from `jobRun.meta` when that is an object, plus the
 * first input under `includeInputAtKey` when asked. The output is the response body as text (a
 * jsonparse picks the value, usually `data,result`). A non-200 answer, or an adapter body whose
 * `statusCode` is not 200, fails the task with the adapter's own message. The body is read under
 * BRIDGE_MAX_RESPONSE_BYTES (or the task's literal `maxResponseBytes`).
 * `async="true"` (a bridge that answers later through the node's callback URL) and `cacheTTL` (a
 * cached answer served when the bridge fails) are refused when the spec is loaded: feedrunner has
 * neither, and a spec must not run differently than it says.
 */
const BRIDGE_NAME = /^[A-Za-z0-9_-]+$/

export const bridge: TaskDefinition = {
  type: 'bridge',
  // It reaches the network or the chain: it runs in the pipeline's own thread.
  runsIn: 'main',
  attributes: [
    'name',
    'requestData',
    'includeInputAtKey',
    'headers',
    'cacheTTL',
    'async',
    'maxResponseBytes',
  ],
  required: ['name'],
  jsonAttributes: ['requestData', 'headers'],
  // No kind for cacheTTL: check() refuses any value, and "must be a duration" beside "remove cacheTTL"
  // would send the author to fix a spelling that is refused all the same.
  kinds: { async: 'boolean' },
  check(attributes) {
    const problems: { attribute: string; message: string }[] = []
    const name = attributes.name?.trim() ?? ''
    if (name !== '' && !name.startsWith('$(') && !BRIDGE_NAME.test(name))
      problems.push({
        attribute: 'name',
        message: `must be a bridge name such as "datafeed" (letters, digits, _ and -), got ${JSON.stringify(name.slice(0, 60))}`,
      })
    if (attributes.async !== undefined && parseBoolText(attributes.async.trim()) === true)
      problems.push({
        attribute: 'async',
        message:
          'asynchronous bridges are not supported: feedrunner has no callback URL for an adapter to answer later; make the adapter answer at once, or remove async',
      })
    if (attributes.cacheTTL !== undefined)
      problems.push({
        attribute: 'cacheTTL',
        message:
          'is not supported: feedrunner keeps no cache of bridge answers to serve when the bridge fails (the adapter caches its own); remove cacheTTL',
      })
    return problems
  },
  async run(task) {
    const name = String(task.value('name') ?? '').trim()
    if (!BRIDGE_NAME.test(name))
      throw new TaskError(
        `name must be a bridge name such as "datafeed", got ${JSON.stringify(name)}`,
      )
    const url = bridgeUrl(task.context.env, name)
    if (url === undefined)
      throw new TaskError(
        `bridge ${name}: BRIDGE_${name.toUpperCase().replace(/[^A-Z0-9]/g, '_')}_URL is not set`,
        { kind: 'config' },
      )
    const requestData = task.json('requestData') ?? {}
    if (!isPlainObject(requestData)) throw new TaskError('requestData must be a JSON object')
    const body: Record<string, unknown> = { ...requestData }
    const meta =
      task.vars.jobRun !== undefined && isPlainObject(task.vars.jobRun)
        ? task.vars.jobRun.meta
        : undefined
    if (isPlainObject(meta)) body.meta = meta
    const includeAt = task.raw('includeInputAtKey')
    if (includeAt) body[includeAt] = task.inputValues()[0]
    const reach = task.context.bridgeReach?.(name, url)
    const { status, text } = await exchange({
      method: 'POST',
      url,
      body: toJsonText(body),
      headers: withHeaders(
        { 'content-type': 'application/json' },
        headerPairs(task.json('headers')),
      ),
      signal: task.signal,
      cap: responseCap(task, 'bridge'),
    }).catch((error: unknown) => {
      // Not reached at all (refused, reset, unknown host); a slow or failing answer is the adapter's.
      if (errorKindOf(error) === 'unavailable') reach?.failed(error)
      throw error
    })
    reach?.answered()
    const adapterStatus = statusInBody(text)
    if (status !== 200 || (adapterStatus !== undefined && adapterStatus !== 200)) {
      const reason = (adapterErrorMessage(text) ?? text).slice(0, 200)
      // The adapter's own error status is the more precise; a body saying 200 under an error
      // status is not an answer, and the HTTP status says what failed.
      const answered = adapterStatus !== undefined && adapterStatus !== 200 ? adapterStatus : status
      // The adapter's words are the root cause; the bridge, its URL and status say where. A 502 is
      // the feed service failing after the adapter's own retries: final, for the task and the run.
      const failure = {
        kind: statusKind(answered),
        retryable: answered !== 502 && isRetryableStatus(answered),
      }
      throw new TaskError(`bridge ${name} (${redactUrl(url)}) answered ${answered}: ${reason}`, {
        ...failure,
        cause: new FeedrunnerError(reason, failure),
      })
    }
    return text
  },
}

/**
 * `defaults` with the spec's headers over them, names compared without case: a spec's Content-Type
 * replaces the task's own, as on a node.
 */
export function withHeaders(
  defaults: Record<string, string>,
  extra: Record<string, string>,
): Record<string, string> {
  const headers = { ...defaults }
  for (const [name, value] of Object.entries(extra)) {
    for (const existing of Object.keys(headers))
      if (existing.toLowerCase() === name.toLowerCase()) delete headers[existing]
    headers[name] = value
  }
  return headers
}

/** Chainlink's `headers` attribute: a flat list ["Name", "value", ...]. */
export function headerPairs(value: unknown): Record<string, string> {
  if (value === undefined) return {}
  if (
    !Array.isArray(value) ||
    value.length % 2 !== 0 ||
    value.some((item) => typeof item !== 'string')
  ) {
    throw new TaskError('headers must be a list of name, value pairs such as ["X-Key", "value"]')
  }
  const headers: Record<string, string> = {}
  for (let i = 0; i < value.length; i += 2) headers[value[i] as string] = value[i + 1] as string
  return headers
}

function statusInBody(text: string): number | undefined {
  try {
    const body = JSON.parse(text) as unknown
    return isPlainObject(body) && typeof body.statusCode === 'number' ? body.statusCode : undefined
  } catch {
    return undefined
  }
}
