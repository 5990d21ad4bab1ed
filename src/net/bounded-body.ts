import type { NodeBudget } from './decode-budget.ts'

/**
 * Reading a body from a source feedrunner does not control: bytes are counted as they arrive, and the
 * read stops at the cap (leaving the loop early destroys an undici body and cancels a fetch body, which
 * closes the connection), so a source answering endlessly costs at most the cap in memory.
 */
export type BoundedBody =
  | { ok: true; bytes: Buffer }
  | { ok: false; /** Bytes received when the read stopped (more than the cap). */ received: number }

export async function readBounded(
  body: AsyncIterable<Uint8Array> | null | undefined,
  maxBytes: number,
): Promise<BoundedBody> {
  if (!body) return { ok: true, bytes: Buffer.alloc(0) }
  const chunks: Uint8Array[] = []
  let received = 0
  for await (const chunk of body) {
    received += chunk.byteLength
    if (received > maxBytes) return { ok: false, received }
    chunks.push(chunk)
  }
  return { ok: true, bytes: Buffer.concat(chunks, received) }
}

const utf8 = new TextDecoder('utf-8', { fatal: true })

/** The bytes as UTF-8 text, or undefined when they are not valid UTF-8 (a BOM is dropped, as JSON allows). */
export function utf8Text(bytes: Uint8Array): string | undefined {
  try {
    return utf8.decode(bytes)
  } catch {
    return undefined
  }
}

/** A content-length header that already says the body is over the cap. */
export function declaredLength(header: string | string[] | undefined | null): number | undefined {
  const text = Array.isArray(header) ? header[0] : header
  if (text === undefined || text === null || !/^\d+$/.test(text.trim())) return undefined
  return Number(text.trim())
}

/**
 * Where JSON text first nests arrays and objects deeper than `maxDepth` (strings skipped), or
 * undefined. A linear scan before parsing: V8's JSON.parse builds millions of nested arrays without
 * complaint, and then every recursive walk of them (stringify, zod, a path) overflows the stack.
 * With a budget the same scan counts the values the parse would build (every object, array, key,
 * string, number and literal; a string one more per 32 bytes) and throws DecodeBudgetError past it:
 * `[[],[],...]` builds a value every 3 bytes, 50 bytes of memory each.
 */
export function nestingBeyond(
  text: string,
  maxDepth: number,
  budget?: NodeBudget,
): number | undefined {
  let depth = 0
  for (let at = 0; at < text.length; at++) {
    const code = text.charCodeAt(at)
    if (code === 0x22) {
      // Skip a string: up to the next quote that no backslash escapes.
      const start = at
      for (at++; at < text.length; at++) {
        const inner = text.charCodeAt(at)
        if (inner === 0x5c) at++
        else if (inner === 0x22) break
      }
      budget?.takeString(at - start - 1)
    } else if (code === 0x5b || code === 0x7b) {
      if (++depth > maxDepth) return at
      budget?.take()
    } else if (code === 0x5d || code === 0x7d) depth--
    else if (budget && isScalarStart(code)) {
      budget.take()
      while (at + 1 < text.length && isScalarPart(text.charCodeAt(at + 1))) at++
    }
  }
  return undefined
}

/** A number (`-`, a digit) or a literal (true, false, null). */
function isScalarStart(code: number): boolean {
  return (
    code === 0x2d ||
    (code >= 0x30 && code <= 0x39) ||
    code === 0x74 ||
    code === 0x66 ||
    code === 0x6e
  )
}

/** What follows in a number or a literal: digits, letters, `.`, `+`, `-`. */
function isScalarPart(code: number): boolean {
  return (
    (code >= 0x30 && code <= 0x39) ||
    (code >= 0x61 && code <= 0x7a) ||
    (code >= 0x41 && code <= 0x5a) ||
    code === 0x2e ||
    code === 0x2b ||
    code === 0x2d
  )
}
