import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'

/**
 * The longest error message the adapter sends: a message that quotes the input must not send a
 * hostile caller's 100,000-digit `times` back whole.
 */
export const MAX_ERROR_MESSAGE_BYTES = 1024

/**
 * Bounds the message of every error answer at MAX_ERROR_MESSAGE_BYTES, whoever wrote it: our errors
 * cut the values they repeat where they arise (src/reduce/errors.ts `quoted`, the catalog's `shown`),
 * and this is the last word for the framework's own (an endpoint name it repeats, a validation
 * message). Only error answers longer than the bound are parsed again.
 */
export function installErrorBounds(api: FastifyInstance): void {
  api.addHook(
    'onSend',
    (
      _request: FastifyRequest,
      reply: FastifyReply,
      payload: unknown,
      done: (error: Error | null, payload?: unknown) => void,
    ) => {
      if (reply.statusCode < 400 || typeof payload !== 'string') return done(null, payload)
      if (Buffer.byteLength(payload) <= MAX_ERROR_MESSAGE_BYTES) return done(null, payload)
      done(null, boundedErrorBody(payload))
    },
  )
}

/** An errored answer's JSON with its message (and any `errorMessage`) cut to the bound. */
export function boundedErrorBody(payload: string): string {
  let body: unknown
  try {
    body = JSON.parse(payload)
  } catch {
    return boundedText(payload)
  }
  if (body === null || typeof body !== 'object') return boundedText(payload)
  const record = body as {
    error?: { message?: unknown }
    errorMessage?: unknown
    message?: unknown
  }
  if (record.error && typeof record.error.message === 'string')
    record.error.message = boundedText(record.error.message)
  for (const field of ['errorMessage', 'message'] as const)
    if (typeof record[field] === 'string') record[field] = boundedText(record[field])
  return JSON.stringify(body)
}

/** `text` within MAX_ERROR_MESSAGE_BYTES of UTF-8, with how long it was when it was cut. */
export function boundedText(text: string): string {
  if (Buffer.byteLength(text) <= MAX_ERROR_MESSAGE_BYTES) return text
  const note = `... (cut: ${text.length} characters)`
  const room = MAX_ERROR_MESSAGE_BYTES - Buffer.byteLength(note)
  // Cut by bytes, then drop a character the cut split in two.
  const head = Buffer.from(text)
    .subarray(0, room)
    .toString('utf8')
    .replace(/\uFFFD$/, '')
  return head + note
}
