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
 */
export function nestingBeyond(text: string, maxDepth: number): number | undefined {
  let depth = 0
  for (let at = 0; at < text.length; at++) {
    const code = text.charCodeAt(at)
    if (code === 0x22) {
      // Skip a string: up to the next quote that no backslash escapes.
      for (at++; at < text.length; at++) {
        const inner = text.charCodeAt(at)
        if (inner === 0x5c) at++
        else if (inner === 0x22) break
      }
    } else if (code === 0x5b || code === 0x7b) {
      if (++depth > maxDepth) return at
    } else if (code === 0x5d || code === 0x7d) depth--
  }
  return undefined
}
