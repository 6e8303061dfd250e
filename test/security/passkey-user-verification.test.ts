import t from 'tap'
import { assertError } from '../fixtures/assertions.js'
import { SoftwareCredential } from '../fixtures/authenticator.js'
import { build } from '../fixtures/build.js'
import { credentials, loggedInUser } from '../fixtures/factories.js'

/*
 * Issue 21, finding 12: a passkey registered without user verification counted as a sign-in
 * method (it let the account unlink its last provider, and the console listed it) but could never
 * sign in, since a passkey login requires user verification. Registration now requires it too.
 */

for (const variant of ['header', 'cookie'] as const) {
  t.test(`${variant}: a passkey made without user verification is refused at registration, so every stored passkey can sign in`, async (t) => {
    const server = await build(t, { variant })
    const session = await loggedInUser(server, variant)
    const offered = await server.inject({ method: 'POST', url: '/auth/passkeys/registration-options', ...credentials(variant, session) })
    t.equal(offered.json().authenticatorSelection.userVerification, 'required', 'the browser is told user verification is required')

    const credential = new SoftwareCredential()
    const payload = credential.register(offered.json(), { userVerified: false })
    assertError(t, await server.inject({ method: 'POST', url: '/auth/passkeys', ...credentials(variant, session), payload }), 400, 'INVALID_PASSKEY_REGISTRATION')
    t.same(await server.store.listPasskeys(session.user.id), [], 'nothing stored')

    const again = await server.inject({ method: 'POST', url: '/auth/passkeys/registration-options', ...credentials(variant, session) })
    const verified = await server.inject({ method: 'POST', url: '/auth/passkeys', ...credentials(variant, session), payload: credential.register(again.json()) })
    t.equal(verified.statusCode, 201, 'with user verification the same authenticator registers')
    const options = (await server.inject({ method: 'POST', url: '/auth/passkeys/authentication-options' })).json()
    t.equal((await server.inject({ method: 'POST', url: '/auth/passkeys/login', payload: credential.assert(options) })).statusCode, 200, 'and signs in')
  })
}
