import type {
  FastifyInstance,
  FastifyReply,
  FastifyRequest,
  HookHandlerDoneFunction,
} from 'fastify'
import { SIGN_KEY_PLACEHOLDER } from './input-parameters.ts'

/**
 * A key a client sent instead of the placeholder. It is taken out of the request body before the
 * framework sees it (the framework logs request bodies with its errors) and kept here, beside the
 * request, for the one in-process fetch that may use it. It never reaches the queue, the cache,
 * a log line or a response.
 */
const clientKeys = new WeakMap<object, unknown>()

/** What the body carries in place of a client key; the validation step then refuses or accepts it. */
export const CLIENT_KEY_MARKER = '##clientKey'

export function clientKeyOf(request: object): unknown {
  return clientKeys.get(request)
}

/**
 * Runs before the framework's validation:
 * - refuses a body that is not a JSON object with a 400;
 * - moves a client key out of the body (see above);
 * - turns numbers in `data` into their decimal text: the feed's parameters and `times` are strings,
 *   and a Chainlink job may send `times: 100` or `token_id: 1234` as JSON numbers.
 */
export function installRequestPreparation(api: FastifyInstance): void {
  // Callback style, not async: this runs on every request, a promise per request is measurable.
  api.addHook(
    'preValidation',
    (request: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction) => {
      // The framework assigns `body.data` and answers a JSON number, string, boolean or null body with
      // a 500 ("Cannot create property 'data' on number '0'"): such a body is the caller's mistake.
      // Only POST carries a request; GET /health, /live, /ready and the dashboard have no body.
      if (request.method !== 'POST') return done()
      if (!isRecord(request.body)) {
        void reply.code(400).send({
          status: 'errored',
          statusCode: 400,
          error: {
            name: 'AdapterInputError',
            message:
              'the request body must be a JSON object: {"id": "...", "data": {"endpoint": "...", ...}}',
          },
        })
        return
      }
      prepareBody(request)
      done()
    },
  )
}

function prepareBody(request: FastifyRequest): void {
  const body = request.body
  if (!isRecord(body) || !isRecord(body.data)) return
  const data = body.data
  for (const [name, value] of Object.entries(data)) {
    if (typeof value === 'number' && Number.isFinite(value)) data[name] = String(value)
  }
  const key = data.key
  if (key !== undefined && key !== null && key !== SIGN_KEY_PLACEHOLDER) {
    clientKeys.set(request, key)
    data.key = CLIENT_KEY_MARKER
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value)
}
