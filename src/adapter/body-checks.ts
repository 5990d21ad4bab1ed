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
  api.addHook(
    'preParsing',
    async (request: FastifyRequest, reply: FastifyReply, payload: Readable) => {
      if (request.method !== 'POST') return payload
      const type = request.headers['content-type']
      if (type !== JSON_TYPE) {
        logger.debug({ contentType: type }, 'request body refused: not application/json')
        return refuse(
          reply,
          400,
          `the content type must be exactly ${JSON_TYPE} (got ${JSON.stringify(type ?? '')})`,
        )
      }
      const chunks: Buffer[] = []
      let size = 0
      for await (const chunk of payload) {
        size += (chunk as Buffer).length
        // Past the limit the rest is read and dropped (see drainLimit), kept nowhere.
        if (size > bodyLimit) {
          if (size > drainLimit(bodyLimit)) break
          continue
        }
        chunks.push(chunk as Buffer)
      }
      if (size > bodyLimit) {
        logger.debug({ bodyLimit }, 'request body refused: too large')
        return refuse(reply, 413, `the request body is larger than ${bodyLimit} bytes`)
      }
      const body = Buffer.concat(chunks)
      try {
        JSON.parse(body.toString('utf8'))
      } catch (error) {
        logger.debug({ err: (error as Error).message }, 'request body refused: not JSON')
        return refuse(
          reply,
          400,
          `the request body is not JSON (${(error as Error).message}): send {"id": "...", "data": {"endpoint": "...", ...}}`,
        )
      }
      // Fastify reads the body again from this stream, and checks its length against what it received.
      return Object.assign(Readable.from([body]), { receivedEncodedLength: body.length })
    },
  )
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
