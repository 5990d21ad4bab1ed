/**
 * Removes secrets from text that leaves the process (a log line, a queue record, a response), in
 * every form a secret travels or comes back in: as it is, %-encoded (as it goes in a URL's query),
 * form-encoded, hex and base64 (from any of its three byte alignments, so a part of it encodes the
 * same), all compared case-folded. With `partial`, also any run of a form at least a third of the
 * shortest form long: a service that echoes half a key, upper-cased, gives it back no more than the
 * whole.
 * Secrets shorter than 4 characters are left alone (they would garble every message).
 *
 * Partial matching finds every such window in the text in one pass of a rolling hash, so its cost
 * grows with the text and not with the number of windows.
 */
export const REDACTED = '[redacted]'

const MIN_SECRET = 4
/** Forms shorter than this are matched whole even in partial mode. */
const MIN_PARTIAL_FORM = 20
const MIN_WINDOW = 10

export interface ScrubOptions {
  partial?: boolean
}

export type Scrubber = (text: string) => string

export function secretScrubber(secrets: readonly string[], options: ScrubOptions = {}): Scrubber {
  const forms = [
    ...new Set(secrets.filter((secret) => secret.length >= MIN_SECRET).flatMap(formsOf)),
  ]
  const whole = forms.filter((form) => !options.partial || form.length < MIN_PARTIAL_FORM)
  const windows = options.partial
    ? windowSets(forms.filter((form) => form.length >= MIN_PARTIAL_FORM))
    : []
  if (forms.length === 0) return (text) => text
  return (text) => {
    if (text.length < MIN_SECRET) return text
    const lower = asciiLower(text)
    const spans: Array<[number, number]> = []
    for (const form of whole) {
      for (let at = lower.indexOf(form); at >= 0; at = lower.indexOf(form, at + 1))
        spans.push([at, at + form.length])
    }
    for (const set of windows) findWindows(lower, set, spans)
    return spans.length === 0 ? text : redact(text, spans)
  }
}

/** Every form of a secret, lower-cased. */
function formsOf(secret: string): string[] {
  const forms = [
    secret,
    encodeURIComponent(secret),
    new URLSearchParams({ k: secret }).toString().slice(2),
    Buffer.from(secret, 'utf8').toString('hex'),
  ]
  for (let shift = 0; shift < 3 && shift < secret.length; shift++) {
    const bytes = Buffer.from(secret, 'utf8').subarray(shift)
    const base64 = bytes.toString('base64').replace(/=+$/, '')
    // From its start, the whole encoding without padding; from a shifted start only its whole
    // groups: how it ends there depends on what follows it.
    const kept = shift === 0 ? base64 : base64.slice(0, Math.floor(bytes.length / 3) * 4)
    forms.push(kept, kept.replace(/\+/g, '-').replace(/\//g, '_'))
  }
  return forms.map(asciiLower).filter((form) => form.length >= MIN_SECRET)
}

/** ASCII letters lower-cased, every other character kept, so positions stay where they were. */
function asciiLower(text: string): string {
  return /[A-Z]/.test(text) ? text.replace(/[A-Z]+/g, (run) => run.toLowerCase()) : text
}

interface WindowSet {
  length: number
  /** B^(length-1), for removing the character that leaves the window. */
  power: number
  /** A bit per low 16 bits of a window's hash: most positions are ruled out by one array read. */
  filter: Uint8Array
  hashes: Set<number>
  texts: Set<string>
}

const BASE = 31

/**
 * Every window of every form, all of one length (a third of the shortest form, at least MIN_WINDOW),
 * so that one pass over a text finds them all.
 */
function windowSets(forms: readonly string[]): WindowSet[] {
  if (forms.length === 0) return []
  const shortest = Math.min(...forms.map((form) => form.length))
  const length = Math.max(MIN_WINDOW, Math.floor(shortest / 3))
  let power = 1
  for (let index = 1; index < length; index++) power = Math.imul(power, BASE)
  const set: WindowSet = {
    length,
    power,
    filter: new Uint8Array(65_536),
    hashes: new Set(),
    texts: new Set(),
  }
  for (const form of forms) {
    for (let start = 0; start + length <= form.length; start++) {
      const window = form.slice(start, start + length)
      const hash = hashOf(window, 0, length)
      set.texts.add(window)
      set.hashes.add(hash)
      set.filter[hash & 0xffff] = 1
    }
  }
  return [set]
}

function hashOf(text: string, start: number, length: number): number {
  let hash = 0
  for (let index = start; index < start + length; index++)
    hash = (Math.imul(hash, BASE) + text.charCodeAt(index)) | 0
  return hash
}

/** Adds the span of every window of `set` found in `text` (a rolling hash, then a check). */
function findWindows(text: string, set: WindowSet, spans: Array<[number, number]>): void {
  const { length, power, filter } = set
  if (text.length < length) return
  let hash = hashOf(text, 0, length)
  for (let start = 0; ; start++) {
    if (
      filter[hash & 0xffff] === 1 &&
      set.hashes.has(hash) &&
      set.texts.has(text.slice(start, start + length))
    )
      spans.push([start, start + length])
    if (start + length >= text.length) return
    const leaving = Math.imul(text.charCodeAt(start), power)
    hash = (Math.imul((hash - leaving) | 0, BASE) + text.charCodeAt(start + length)) | 0
  }
}

/** `text` with every span (merged where they touch) replaced by REDACTED. */
function redact(text: string, spans: Array<[number, number]>): string {
  spans.sort((a, b) => a[0] - b[0])
  let result = ''
  let at = 0
  let end = -1
  for (const [start, stop] of spans) {
    if (start > end) {
      if (end >= 0) result += REDACTED
      result += text.slice(at, start)
    }
    end = Math.max(end, stop)
    at = end
  }
  return result + REDACTED + text.slice(at)
}
