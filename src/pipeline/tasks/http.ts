import { lookup } from 'node:dns/promises'
import { BlockList, isIP } from 'node:net'
import { optionalBoolean, TaskError, type TaskDefinition } from '../task.ts'
import { wholeVarExpression } from '../vars.ts'
import { toJsonText } from '../values.ts'
import { headerPairs } from './bridge.ts'
import { FeedrunnerError } from '../../config/errors.ts'
import {
  adapterErrorMessage,
  exchange,
  isRetryableStatus,
  redactUrl,
  statusKind,
} from './http-client.ts'

/**
 * http(method, url, requestData, headers, allowUnrestrictedNetworkAccess): output is the body as text.
 * As in Chainlink, a URL that comes from a variable (`url="$(decode_cbor.url)"`, chosen by whoever
 * made the request) may not reach loopback, private, link-local or unspecified addresses unless
 * `allowUnrestrictedNetworkAccess="true"`; redirects are then refused as well, so a public host
 * cannot bounce the request inward. A literal URL written by the operator is trusted.
 */
const restricted = new BlockList()
for (const [net, prefix] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
] as const) {
  restricted.addSubnet(net, prefix, 'ipv4')
}
for (const [net, prefix] of [
  ['::', 128],
  ['::1', 128],
  ['fc00::', 7],
  ['fe80::', 10],
  ['ff00::', 8],
] as const)
  restricted.addSubnet(net, prefix, 'ipv6')

export function isRestrictedAddress(address: string): boolean {
  const family = isIP(address)
  if (family === 0) return true
  const embedded = family === 6 ? embeddedIpv4(address) : undefined
  if (embedded !== undefined && restricted.check(embedded, 'ipv4')) return true
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address)
  if (mapped?.[1]) return restricted.check(mapped[1], 'ipv4')
  return restricted.check(address, family === 4 ? 'ipv4' : 'ipv6')
}

/**
 * The IPv4 address an IPv6 address carries, if any: IPv4-mapped (::ffff:a.b.c.d), IPv4-compatible
 * (::a.b.c.d), NAT64 (64:ff9b::/96) and 6to4 (2002:AABB:CCDD::/48). A gateway may turn such an
 * address into the IPv4 one, so it is judged by that address.
 */
function embeddedIpv4(address: string): string | undefined {
  const words = ipv6Words(address)
  if (!words) return undefined
  const quad = (high: number, low: number) =>
    `${high >> 8}.${high & 0xff}.${low >> 8}.${low & 0xff}`
  const zeroUntil = (end: number) => words.slice(0, end).every((word) => word === 0)
  if (zeroUntil(5) && words[5] === 0xffff) return quad(words[6]!, words[7]!)
  if (zeroUntil(6) && (words[6] !== 0 || words[7]! > 1)) return quad(words[6]!, words[7]!)
  if (words[0] === 0x64 && words[1] === 0xff9b && words.slice(2, 6).every((word) => word === 0))
    return quad(words[6]!, words[7]!)
  if (words[0] === 0x2002) return quad(words[1]!, words[2]!)
  return undefined
}

/** The eight 16-bit words of an IPv6 address (a trailing dotted quad allowed), or undefined. */
function ipv6Words(address: string): number[] | undefined {
  let text = address.toLowerCase().replace(/%.*$/, '')
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(text)
  if (dotted?.[1]) {
    const bytes = dotted[1].split('.').map(Number)
    if (bytes.some((byte) => byte > 255)) return undefined
    text = `${text.slice(0, -dotted[1].length)}${((bytes[0]! << 8) | bytes[1]!).toString(16)}:${((bytes[2]! << 8) | bytes[3]!).toString(16)}`
  }
  const halves = text.split('::')
  if (halves.length > 2) return undefined
  const parse = (part: string) =>
    part === '' ? [] : part.split(':').map((word) => Number.parseInt(word, 16))
  const head = parse(halves[0]!)
  const tail = halves.length === 2 ? parse(halves[1]!) : []
  const words =
    halves.length === 2
      ? [...head, ...new Array<number>(8 - head.length - tail.length).fill(0), ...tail]
      : head
  return words.length === 8 &&
    words.every((word) => Number.isInteger(word) && word >= 0 && word <= 0xffff)
    ? words
    : undefined
}

async function assertPublicHost(url: URL): Promise<void> {
  const host = url.hostname.replace(/^\[|\]$/g, '')
  const addresses = isIP(host)
    ? [host]
    : (await lookup(host, { all: true }).catch(() => [])).map((entry) => entry.address)
  if (addresses.length === 0)
    throw new TaskError(`url: cannot resolve ${host}`, { kind: 'unavailable' })
  const inward = addresses.find(isRestrictedAddress)
  if (inward !== undefined) {
    throw new TaskError(
      `url: ${host} resolves to ${inward}, a private or loopback address; a URL from a variable may not reach it unless allowUnrestrictedNetworkAccess="true"`,
    )
  }
}

const SUPPORTED_METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD'] as const
function isSupportedMethod(method: string): method is (typeof SUPPORTED_METHODS)[number] {
  return (SUPPORTED_METHODS as readonly string[]).includes(method)
}

export const http: TaskDefinition = {
  type: 'http',
  attributes: ['method', 'url', 'requestData', 'headers', 'allowUnrestrictedNetworkAccess'],
  required: ['method', 'url'],
  jsonAttributes: ['requestData', 'headers'],
  async run(task) {
    const method = String(task.value('method') ?? 'GET').toUpperCase()
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
    const guarded = fromVariable && !unrestricted
    if (guarded) await assertPublicHost(url)
    const requestData = task.json('requestData')
    const withBody = requestData !== undefined && method !== 'GET' && method !== 'HEAD'
    const { status, text } = await exchange({
      method,
      url: url.toString(),
      body: withBody ? toJsonText(requestData) : undefined,
      headers: {
        ...(withBody ? { 'content-type': 'application/json' } : {}),
        ...headerPairs(task.json('headers')),
      },
      signal: task.signal,
      redirect: guarded ? 'error' : 'follow',
    })
    if (status < 200 || status >= 300) {
      const reason = adapterErrorMessage(text) ?? text.slice(0, 200)
      const failure = { kind: statusKind(status), retryable: isRetryableStatus(status) }
      throw new TaskError(`${method} ${redactUrl(url.toString())} answered ${status}: ${reason}`, {
        ...failure,
        cause: new FeedrunnerError(reason, failure),
      })
    }
    return text
  },
}
