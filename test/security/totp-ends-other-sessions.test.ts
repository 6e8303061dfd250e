import t from 'tap'
import { assertError } from '../fixtures/assertions.js'
import { build } from '../fixtures/build.js'
import { credentials, logIn, loggedInUser } from '../fixtures/factories.js'
import { enableTotp } from '../fixtures/mfa.js'

/*
 * Issue 21, finding 12: turning TOTP on left every other session alive, so a thief's session
 * outlived the owner's move to a second factor. Confirming TOTP now ends every other session of
 * the user, as a password change does; the session that turned it on goes on.
 */

for (const variant of ['header', 'cookie'] as const) {
  t.test(`${variant}: turning TOTP on signs every other device out and keeps this one`, async (t) => {
    const server = await build(t, { variant })
    const current = await loggedInUser(server, variant)
    const other = await logIn(server, variant, current.user)
    await enableTotp(server, variant, current)

    const refresh = (session: typeof current) => server.inject({ method: 'POST', url: '/auth/refresh-token', ...credentials(variant, session) })
    const refused = await refresh(other)
    t.equal(refused.statusCode, 401, `the other session ended: ${refused.body}`)
    assertError(t, await server.inject({ method: 'GET', url: '/auth/account', ...credentials(variant, other) }), 401, 'SESSION_REVOKED')
    t.equal((await refresh(current)).statusCode, 200, 'the session that turned it on goes on')
    t.equal((await server.inject({ method: 'GET', url: '/auth/account', ...credentials(variant, current) })).json().mfa.totp, true)
  })
}
