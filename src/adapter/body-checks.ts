import { Readable } from 'node:stream'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { Logger } from '../config/logger.ts'

/** The content type the framework serves (exactly this: it refuses `; charset=utf-8`, NOTES.md). */
const JSON_TYPE = 'application/json'

/** A body of the wrong kind, answered in the adapter's JSON error shape. */
function refuse(reply: FastifyReply, statusCode: number, message: string): FastifyReply {
  return reply
    .code(statusCode)
    .type('application/json; charset=utf-8')
    .send({ status: 'errored', statusCode, error: { name: 'AdapterInputError', message } })
}

/**
 * Reads each POST body before Fastify parses it, and answers one the adapter cannot read (too large,
 * not JSON, the wrong content type) in the adapter's JSON error shape. Fastify's own answers to these
 * are plain text from the framework's error handler, logged with a stack trace; the handler cannot be
 * replaced here, as the framework's route took it when its plugin loaded. The body is parsed once
 * more by Fastify afterwards: a few microseconds for the small bodies a bridge sends.
 */
export function installBodyChecks(api: FastifyInstance, bodyLimit: number, logger: Logger): void {
  // Callback style, not async: this runs on every request, and an async iterator over each body and
  // a promise per request are measurable.
  api.addHook(
    'preParsing',
    (
      request: FastifyRequest,
      reply: FastifyReply,
      payload: Readable,
      done: (error: Error | null, payload?: Readable) => void,
    ) => {
      if (request.method !== 'POST') return done(null, payload)
      const type = request.headers['content-type']
      if (type !== JSON_TYPE) {
        logger.debug({ contentType: type }, 'request body refused: not application/json')
        void refuse(
          reply,
          400,
          `the content type must be exactly ${JSON_TYPE} (got ${JSON.stringify(type ?? '')})`,
        )
        return
      }
      readWithin(payload, bodyLimit, (error, body) => {
        if (error) return done(error)
        if (!body) {
          logger.debug({ bodyLimit }, 'request body refused: too large')
          void refuse(reply, 413, `the request body is larger than ${bodyLimit} bytes`)
          return
        }
        try {
          JSON.parse(body.toString('utf8'))
        } catch (parseError) {
          logger.debug({ err: (parseError as Error).message }, 'request body refused: not JSON')
          void refuse(
            reply,
            400,
            `the request body is not JSON (${(parseError as Error).message}): send {"id": "...", "data": {"endpoint": "...", ...}}`,
          )
          return
        }
        // Fastify reads the body again from this stream, and checks its length against what it received.
        done(null, Object.assign(onceStream(body), { receivedEncodedLength: body.length }))
      })
    },
  )
}

/**
 * Reads a body whole when it is within the limit; past it, reads the rest and drops it (see
 * drainLimit), and answers undefined. Past drainLimit the body is left unread (its connection closes).
 */
function readWithin(
  payload: Readable,
  bodyLimit: number,
  then: (error: Error | null, body?: Buffer) => void,
): void {
  const chunks: Buffer[] = []
  let size = 0
  let ended = false
  const end = (error?: Error) => {
    if (ended) return
    ended = true
    payload.off('data', onData)
    if (error) return then(error)
    then(null, size > bodyLimit ? undefined : Buffer.concat(chunks))
  }
  const onData = (chunk: Buffer) => {
    size += chunk.length
    // Past the limit the rest is read and dropped, kept nowhere.
    if (size <= bodyLimit) chunks.push(chunk)
    else if (size > drainLimit(bodyLimit)) {
      end()
      payload.destroy()
    }
  }
  payload.on('data', onData)
  payload.once('end', () => end())
  payload.once('error', end)
}

/** A stream of one buffer, then its end: what Fastify's body reader takes in place of the socket's. */
function onceStream(body: Buffer): Readable {
  return new Readable({
    read() {
      this.push(body)
      this.push(null)
    },
  })
}

/**
 * How many bytes of a body too large are read (and dropped) before its 413 is sent. An answer sent
 * while the client still uploads makes the server close the connection under it, and the client may
 * see a connection reset instead of the 413 (a 5 MB body did, on a loaded machine). Reading the rest
 * first, up to this bound, gets the answer through; a body larger still is answered at the bound.
 */
function drainLimit(bodyLimit: number): number {
  return Math.max(16 * 1024 * 1024, bodyLimit * 4)
}
