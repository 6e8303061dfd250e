import type { FastifyRequest } from 'fastify'
import type { SessionClient } from '../plugins/app/sessions.js'

/** Longer User-Agent headers are cut: the value is shown back in GET /auth/sessions, not trusted. */
const USER_AGENT_MAX = 512

/** Who opens a session, as GET /auth/sessions shows it. */
export function sessionClient (request: FastifyRequest): SessionClient {
  return { userAgent: request.headers['user-agent']?.slice(0, USER_AGENT_MAX) ?? null, ip: request.ip }
}
