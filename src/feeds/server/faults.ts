import { createHash } from 'node:crypto'
import type { ServerResponse } from 'node:http'
import type { FeedCall, FeedServerIntercept } from './index.ts'
import { FeedrunnerError } from '../../config/errors.ts'

/**
 * The local feed service's fault mode (`feeds serve --faults <spec>`, reliability tests): a share of
 * the authorised, valid calls is answered wrongly on purpose. Which call gets which fault is a pure
 * function of the seed, the call (endpoint and query) and how often that call was made before, so a
 * run is reproducible whatever order concurrent requests arrive in.
 */
export const FAULT_KINDS = ['500', 'timeout', 'truncated', 'shape', 'slow'] as const
export type FaultKind = (typeof FAULT_KINDS)[number]

export interface FaultSpec {
  /** Share of calls per fault kind, each 0..1; their sum at most 1. */
  rates: Record<FaultKind, number>
  seed: number
  /** Delay of a `slow` answer (below the client's timeout: it must still succeed). */
  slowMs: number
  /** Longest a `timeout` call is held open before its socket is destroyed (a client gives up sooner). */
  hangMs: number
}

export class FaultSpecError extends FeedrunnerError {
  override readonly name = 'FaultSpecError'
  constructor(message: string) {
    super(message, { kind: 'bad_input' })
  }
}

const SETTINGS = ['seed', 'slowMs', 'hangMs'] as const

/** Parses `500=0.1,timeout=0.05,truncated=0.05,shape=0.05,slow=0.05,seed=42,slowMs=300,hangMs=30000`. */
export function parseFaultSpec(text: string): FaultSpec {
  const spec: FaultSpec = {
    rates: { '500': 0, timeout: 0, truncated: 0, shape: 0, slow: 0 },
    seed: 1,
    slowMs: 300,
    hangMs: 30_000,
  }
  for (const part of text
    .split(',')
    .map((item) => item.trim())
    .filter(Boolean)) {
    const match = /^([A-Za-z0-9]+)=([0-9.]+)$/.exec(part)
    if (!match)
      throw new FaultSpecError(`--faults: expected name=number, got ${JSON.stringify(part)}`)
    const [, name, raw] = match as unknown as [string, string, string]
    const value = Number(raw)
    if (!Number.isFinite(value))
      throw new FaultSpecError(`--faults: ${name} is not a number (got ${JSON.stringify(raw)})`)
    if ((FAULT_KINDS as readonly string[]).includes(name)) {
      if (value < 0 || value > 1)
        throw new FaultSpecError(`--faults: rate ${name} must be within 0..1 (got ${raw})`)
      spec.rates[name as FaultKind] = value
    } else if ((SETTINGS as readonly string[]).includes(name)) {
      if (!Number.isInteger(value) || value < 0 || value > 600_000)
        throw new FaultSpecError(`--faults: ${name} must be a whole number 0..600000 (got ${raw})`)
      spec[name as (typeof SETTINGS)[number]] = value
    } else {
      throw new FaultSpecError(
        `--faults: unknown name ${JSON.stringify(name)} (expected ${[...FAULT_KINDS, ...SETTINGS].join(', ')})`,
      )
    }
  }
  const total = FAULT_KINDS.reduce((sum, kind) => sum + spec.rates[kind], 0)
  if (total > 1 + 1e-9)
    throw new FaultSpecError(`--faults: the rates add up to ${total.toFixed(3)}, more than 1`)
  return spec
}

export interface FaultInjector {
  readonly spec: FaultSpec
  readonly intercept: FeedServerIntercept
  /** Faults injected so far, per kind, and calls seen. */
  stats(): { calls: number; injected: Record<FaultKind, number> }
  /** The fault (or none) the n-th attempt of a call gets: what the intercept will do, for tests. */
  faultFor(
    endpoint: string,
    query: Readonly<Record<string, string>>,
    attempt: number,
  ): FaultKind | undefined
}

function callKey(endpoint: string, query: Readonly<Record<string, string>>): string {
  return `${endpoint}?${Object.keys(query)
    .sort()
    .map((name) => `${name}=${query[name]}`)
    .join('&')}`
}

/** A number in [0, 1) from the seed and the text, stable across runs and machines. */
function unitHash(seed: number, text: string): number {
  return createHash('sha256').update(`${seed}\u0000${text}`).digest().readUInt32BE(0) / 2 ** 32
}

export function createFaultInjector(spec: FaultSpec): FaultInjector {
  const attempts = new Map<string, number>()
  const injected: Record<FaultKind, number> = {
    '500': 0,
    timeout: 0,
    truncated: 0,
    shape: 0,
    slow: 0,
  }
  let calls = 0

  function faultFor(
    endpoint: string,
    query: Readonly<Record<string, string>>,
    attempt: number,
  ): FaultKind | undefined {
    let draw = unitHash(spec.seed, `${callKey(endpoint, query)}#${attempt}`)
    for (const kind of FAULT_KINDS) {
      if (draw < spec.rates[kind]) return kind
      draw -= spec.rates[kind]
    }
    return undefined
  }

  async function intercept(call: FeedCall, response: ServerResponse): Promise<boolean> {
    calls++
    const key = callKey(call.endpoint, call.query)
    const attempt = attempts.get(key) ?? 0
    attempts.set(key, attempt + 1)
    const kind = faultFor(call.endpoint, call.query, attempt)
    if (!kind) return false
    injected[kind]++
    switch (kind) {
      case '500':
        sendJson(response, 500, {
          status: 500,
          result: 'error',
          description: 'injected fault: internal error of the feed service',
          query: call.query,
        })
        return true
      case 'timeout':
        await hang(response, spec.hangMs)
        return true
      case 'truncated': {
        const { httpStatus, body } = await call.answer()
        const text = JSON.stringify(body)
        // No content-length: the body ends cleanly, half way through, and does not parse.
        response.writeHead(httpStatus, { 'content-type': 'application/json; charset=utf-8' })
        response.end(text.slice(0, Math.max(1, Math.floor(text.length / 2))))
        return true
      }
      case 'shape': {
        const { httpStatus, body } = await call.answer()
        sendJson(response, httpStatus, {
          ...body,
          data: driftedData(body.data, unitHash(spec.seed, `shape:${key}#${attempt}`)),
        })
        return true
      }
      case 'slow':
        await delay(spec.slowMs)
        return false
    }
  }

  return { spec, intercept, faultFor, stats: () => ({ calls, injected: { ...injected } }) }
}

/** `data` in a shape the catalog does not expect: fields renamed, numbers turned into words, or a list. */
function driftedData(data: unknown, draw: number): unknown {
  if (data === null || typeof data !== 'object' || Array.isArray(data))
    return { unexpected: data ?? null }
  const entries = Object.entries(data as Record<string, unknown>)
  if (draw < 1 / 3) return Object.fromEntries(entries.map(([name, value]) => [`${name}_v2`, value]))
  if (draw < 2 / 3)
    return Object.fromEntries(
      entries.map(([name, value]) => [
        name,
        typeof value === 'number' || typeof value === 'string' ? { value } : value,
      ]),
    )
  return [Object.fromEntries(entries)]
}

function sendJson(response: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body)
  response.writeHead(status, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(text),
  })
  response.end(text)
}

/** Never answers: holds the call until the client gives up (closes) or `maxMs` passes. */
function hang(response: ServerResponse, maxMs: number): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer)
      if (!response.writableEnded) response.destroy()
      resolve()
    }
    const timer = setTimeout(done, maxMs)
    timer.unref()
    response.once('close', done)
  })
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref())
}
