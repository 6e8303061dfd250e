import type { FastifyReply } from 'fastify'
import type { UserRecord } from '../../db/store.js'
import type { StartedSession } from '../../core/sessions/sessions.js'
import type { Variant } from '../../core/config.js'
import type { LoginResponseBody } from '../../core/schemas/auth.js'
import { presentUser } from '../../core/schemas/users.js'
import type { TokenTransport } from '../transport.js'

/**
 * The seed's login answer of the variant, for every route that ends a login (password, second
 * factor): the transport hands the tokens over (cookies in B) and, with the user's shape, makes the body.
 */
export function answerLogin (reply: FastifyReply, transport: TokenTransport, variant: Variant, { user, session }: { user: UserRecord, session: StartedSession }): LoginResponseBody {
  transport.deliver(reply, session)
  return { user: presentUser(user, variant), ...transport.loginTokens(session) } as LoginResponseBody
}
