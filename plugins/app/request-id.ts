import { randomUUID } from 'node:crypto'
import type { IncomingMessage } from 'node:http'
import fp from 'fastify-plugin'

export const REQUEST_ID_HEADER = 'x-request-id'

// A proxy's id is kept when it looks like one; anything else (too long, odd characters) is replaced, never echoed.
const ACCEPTED_REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/

/** Fastify's genReqId: the caller's X-Request-Id when sane, else a new UUID. Every log line of the request carries it as reqId. */
export function requestId (request: IncomingMessage): string {
  const given = request.headers[REQUEST_ID_HEADER]
  return typeof given === 'string' && ACCEPTED_REQUEST_ID.test(given) ? given : randomUUID()
}

/** Answers every request with its id in X-Request-Id, so a client can quote it and an operator find its log lines. */
export default fp(async (fastify) => {
  // A synchronous hook: an async one costs a promise per request.
  fastify.addHook('onRequest', function echoRequestId (request, reply, done) {
    reply.header(REQUEST_ID_HEADER, request.id)
    done()
  })
}, { name: 'request-id' })
