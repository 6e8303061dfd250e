import type { UserRecord } from '../../db/store.js'
import type { Client } from '../events/security-events.js'

/** The signed-in user making a change, and the session it is made from. */
export interface Actor {
  user: UserRecord
  sessionId: string
  client: Client
}
