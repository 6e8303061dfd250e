import { STATUS_CODES } from 'node:http'
import fp from 'fastify-plugin'
import type { FastifyError } from 'fastify'
import { DuplicateValueError } from '../../db/store.js'
import {
  EmailTakenError, InternalError, InvalidJsonError, PayloadTooLargeError, RouteNotFoundError,
  UnsupportedMediaTypeError, UsernameTakenError, ValidationFailedError
} from '../../core/errors.js'
import type { ErrorBody } from '../../core/schemas/errors.js'

// Fastify's own errors whose meaning a client needs, by Fastify's code.
const FRAMEWORK_ERRORS: Record<string, () => FastifyError> = {
  FST_ERR_CTP_INVALID_JSON_BODY: () => new InvalidJsonError(),
  FST_ERR_CTP_BODY_TOO_LARGE: () => new PayloadTooLargeError(),
  FST_ERR_CTP_INVALID_MEDIA_TYPE: () => new UnsupportedMediaTypeError(),
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: () => new ValidationFailedError('Content-Length does not match the body'),
  FST_ERR_BAD_URL: () => new ValidationFailedError('The URL is not valid'),
  FST_ERR_CTP_INVALID_CONTENT_TYPE: () => new UnsupportedMediaTypeError()
}

// Our codes (core/errors.ts); Fastify's and fast-jwt's start FST_ / FAST_ and are not for clients.
const OWN_CODE = /^(?!FST_|FAST_)[A-Z][A-Z0-9_]*$/

/** Turns anything thrown into the one error shape. Only our own codes and schema failures keep their message. */
export function toErrorBody (error: unknown): ErrorBody {
  const known = classify(error)
  return {
    statusCode: known.statusCode ?? 500,
    code: known.code,
    error: STATUS_CODES[known.statusCode ?? 500] ?? 'Error',
    message: known.message
  }
}

function classify (error: unknown): FastifyError {
  if (error instanceof DuplicateValueError) return error.field === 'email' ? new EmailTakenError() : new UsernameTakenError()
  const fastifyError = error as Partial<FastifyError>
  if (fastifyError.validation !== undefined) return new ValidationFailedError(fastifyError.message ?? 'The request is not valid')
  const code = fastifyError.code ?? ''
  const framework = FRAMEWORK_ERRORS[code]
  if (framework !== undefined) return framework()
  const status = fastifyError.statusCode
  // Our own codes keep their status: every 4xx, and 503 (BUSY, STORE_UNAVAILABLE: db/store.ts).
  if (OWN_CODE.test(code) && status !== undefined && ((status >= 400 && status < 500) || status === 503)) return fastifyError as FastifyError
  // A 4xx from a library: keep the status, not its wording.
  if (status !== undefined && status >= 400 && status < 500) {
    return Object.assign(new Error(STATUS_CODES[status] ?? 'Bad request'), { code: 'BAD_REQUEST', statusCode: status }) as FastifyError
  }
  return new InternalError()
}

/** One error handler and one not-found handler for the whole service. */
export default fp(async (fastify) => {
  fastify.setErrorHandler((error, request, reply) => {
    const body = toErrorBody(error)
    if (body.statusCode >= 500 && body.code !== 'BUSY') request.log.error({ err: error }, 'request failed')
    // What the route had set for the answer it meant to give does not go with an error: a Location (the
    // failure may be that very header: Node refuses to write it) or another content type (an HTML page).
    reply.removeHeader('location')
    reply.type('application/json; charset=utf-8')
    const retryAfter = (error as { retryAfter?: unknown }).retryAfter
    if (typeof retryAfter === 'number') reply.header('retry-after', String(retryAfter))
    else if (body.statusCode === 503) reply.header('retry-after', '1')
    // Only our own errors add fields (MFA_REQUIRED's mfa_token); the route's response schema must declare them.
    const bodyFields = (error as { bodyFields?: unknown }).bodyFields
    if (typeof bodyFields === 'object' && bodyFields !== null && body.statusCode < 500) return reply.code(body.statusCode).send({ ...body, ...bodyFields })
    return reply.code(body.statusCode).send(body)
  })

  fastify.setNotFoundHandler((request, reply) => {
    const body = toErrorBody(new RouteNotFoundError(request.method, request.url.split('?')[0]))
    return reply.code(404).send(body)
  })
}, { name: 'error-handler' })
