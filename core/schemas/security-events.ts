import { Type, type Static } from '@sinclair/typebox'
import type { SecurityEventRecord } from '../../db/store.js'
import { SECURITY_EVENT_TYPES } from '../events/types.js'
import { EventId } from './common.js'

/** How many events a page of GET /auth/security-events holds by default, and at most. */
export const SECURITY_EVENTS_PAGE = 50
export const SECURITY_EVENTS_PAGE_MAX = 200

export const SecurityEventsQuery = Type.Object({
  before: Type.Optional(EventId),
  limit: Type.Integer({ minimum: 1, maximum: SECURITY_EVENTS_PAGE_MAX, default: SECURITY_EVENTS_PAGE })
}, { additionalProperties: false })

export const SecurityEventView = Type.Object({
  id: Type.Integer({ description: 'Pass the last one as `before` for the next page' }),
  type: Type.Union(SECURITY_EVENT_TYPES.map(type => Type.Literal(type))),
  created_at: Type.String({ format: 'date-time' }),
  ip: Type.Union([Type.String(), Type.Null()]),
  user_agent: Type.Union([Type.String(), Type.Null()])
}, { additionalProperties: false })

export const SecurityEventsResponse = Type.Object({ events: Type.Array(SecurityEventView) }, { additionalProperties: false })

export function presentSecurityEvent (event: SecurityEventRecord): Static<typeof SecurityEventView> {
  return {
    id: event.id,
    type: event.type as Static<typeof SecurityEventView>['type'],
    created_at: event.createdAt.toISOString(),
    ip: event.ip,
    user_agent: event.userAgent
  }
}
