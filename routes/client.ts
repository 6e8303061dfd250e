import type { FastifyRequest } from 'fastify'
import type { Client } from '../core/events/security-events.js'

/** Longer User-Agent headers are cut: the value is shown back in GET /auth/sessions and the security events, not trusted. */
const USER_AGENT_MAX = 512

/** Who made the request, as sessions and security events record it. */
export function clientOf (request: FastifyRequest): Client {
  return { userAgent: request.headers['user-agent']?.slice(0, USER_AGENT_MAX) ?? null, ip: request.ip, requestId: request.id }
}
