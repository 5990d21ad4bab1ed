import { optionalBoolean, TaskError, type TaskDefinition } from '../task.ts'
import { wholeVarExpression } from '../vars.ts'
import { toJsonText } from '../values.ts'
import { headerPairs, withHeaders } from './bridge.ts'
import { FeedrunnerError } from '../../config/errors.ts'
import {
  adapterErrorMessage,
  exchange,
  isRetryableStatus,
  redactUrl,
  statusKind,
} from './http-client.ts'
import { responseCap } from './response-cap.ts'

export { isRestrictedAddress } from './address-guard.ts'

/**
 * http(method, url, requestData, headers, allowUnrestrictedNetworkAccess, maxResponseBytes): output
 * is the body as text, read under HTTP_TASK_MAX_RESPONSE_BYTES (or the task's literal maxResponseBytes).
 * As in Chainlink, a URL that comes from a variable (`url="$(decode_cbor.url)"`, chosen by whoever
 * made the request) may not reach loopback, private, link-local or unspecified addresses unless
 * `allowUnrestrictedNetworkAccess="true"`: every connection, each redirect hop's included, is checked
 * where it is made (address-guard.ts), so a public host cannot bounce the request inward. A literal
 * URL written by the operator is trusted, and only it: a hop it redirects to is checked the same way
 * (a third-party API that is compromised must not send the node to a cloud metadata service), unless
 * the task says `allowUnrestrictedNetworkAccess="true"`.
 */
const SUPPORTED_METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD'] as const
function isSupportedMethod(method: string): method is (typeof SUPPORTED_METHODS)[number] {
  return (SUPPORTED_METHODS as readonly string[]).includes(method)
}

export const http: TaskDefinition = {
  type: 'http',
  // It reaches the network or the chain: it runs in the pipeline's own thread.
  runsIn: 'main',
  // Its URL may be a requester's: its `retries` attribute retries it within the run, nothing more.
  retriesRun: 'never',
  attributes: [
    'method',
    'url',
    'requestData',
    'headers',
    'allowUnrestrictedNetworkAccess',
    'maxResponseBytes',
  ],
  // No method is GET, as on a node (Chainlink's HTTPTask: `From(NonemptyString(t.Method), "GET")`).
  required: ['url'],
  jsonAttributes: ['requestData', 'headers'],
  kinds: { allowUnrestrictedNetworkAccess: 'boolean' },
  // What the run refuses, refused when the spec is loaded when it is written there.
  check(attributes) {
    const problems: { attribute: string; message: string }[] = []
    const method = attributes.method?.trim().toUpperCase() ?? ''
    if (method !== '' && !method.startsWith('$(') && !isSupportedMethod(method))
      problems.push({
        attribute: 'method',
        message: `${method} is not supported (${SUPPORTED_METHODS.join(', ')})`,
      })
    const url = attributes.url?.trim() ?? ''
    if (url !== '' && !url.includes('$(') && !/^https?:\/\/[^\s]+$/i.test(url))
      problems.push({
        attribute: 'url',
        message: `must be an http or https URL, got ${JSON.stringify(url.slice(0, 60))}`,
      })
    return problems
  },
  async run(task) {
    const method =
      String(task.value('method') ?? '')
        .trim()
        .toUpperCase() || 'GET'
    if (!isSupportedMethod(method)) throw new TaskError(`method ${method} is not supported`)
    const urlText = String(task.value('url') ?? '')
    let url: URL
    try {
      url = new URL(urlText)
    } catch {
      throw new TaskError(`url is not a valid URL: ${JSON.stringify(urlText.slice(0, 80))}`)
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:')
      throw new TaskError(`url must be http or https, got ${url.protocol}`)
    const fromVariable = wholeVarExpression(task.raw('url') ?? '') !== undefined
    const unrestricted = optionalBoolean(task, 'allowUnrestrictedNetworkAccess', false)
    const requestData = task.json('requestData')
    const withBody = requestData !== undefined && method !== 'GET' && method !== 'HEAD'
    const { status, text } = await exchange({
      method,
      url: url.toString(),
      body: withBody ? toJsonText(requestData) : undefined,
      headers: withHeaders(
        withBody ? { 'content-type': 'application/json' } : {},
        headerPairs(task.json('headers')),
      ),
      signal: task.signal,
      cap: responseCap(task, 'http'),
      ...(unrestricted
        ? {}
        : {
            guard: {
              hops: fromVariable ? ('every' as const) : ('redirects' as const),
              resolve: task.context.resolveHost,
            },
          }),
    })
    if (status < 200 || status >= 300) {
      const reason = (adapterErrorMessage(text) ?? text).slice(0, 200)
      const failure = { kind: statusKind(status), retryable: isRetryableStatus(status) }
      throw new TaskError(`${method} ${redactUrl(url.toString())} answered ${status}: ${reason}`, {
        ...failure,
        cause: new FeedrunnerError(reason, failure),
      })
    }
    return text
  },
}
