import t from 'tap'
import { build } from '../fixtures/build.js'
import { assertError } from '../fixtures/assertions.js'
import { credentials, logIn, loggedInUser } from '../fixtures/factories.js'
import type { Variant } from '../../core/config.js'

const variants: Variant[] = ['header', 'cookie']

for (const variant of variants) {
  t.test(`${variant} variant: a refresh token is useless after logout, and logout is idempotent`, async (t) => {
    const server = await build(t, { variant })
    const session = await loggedInUser(server, variant)
    for (let attempt = 0; attempt < 2; attempt++) {
      const logout = await server.inject({ method: 'POST', url: '/auth/logout', ...credentials(variant, session) })
      t.equal(logout.statusCode, 204)
      t.equal(logout.body, '')
      if (variant === 'cookie') {
        const cleared = logout.cookies as Array<{ name: string, value: string, maxAge?: number, expires?: Date }>
        t.same(cleared.map(cookie => cookie.name).sort(), ['accessToken', 'refreshToken'], 'both cookies cleared')
        t.ok(cleared.every(cookie => cookie.value === '' && (cookie.maxAge === 0 || (cookie.expires !== undefined && cookie.expires.getTime() <= Date.now()))))
      }
    }
    const refresh = await server.inject({ method: 'POST', url: '/auth/refresh-token', ...credentials(variant, session) })
    assertError(t, refresh, 401, 'INVALID_REFRESH_TOKEN')
  })

  t.test(`${variant} variant: logout-all ends every session of the user, and only that user's`, async (t) => {
    const server = await build(t, { variant })
    const laptop = await loggedInUser(server, variant)
    const phone = await logIn(server, variant, laptop.user)
    const someoneElse = await loggedInUser(server, variant)

    const unauthenticated = await server.inject({ method: 'POST', url: '/auth/logout-all' })
    assertError(t, unauthenticated, 401, 'MISSING_TOKEN')

    const logoutAll = await server.inject({ method: 'POST', url: '/auth/logout-all', ...credentials(variant, laptop) })
    t.equal(logoutAll.statusCode, 204)
    t.equal(logoutAll.body, '')
    if (variant === 'cookie') {
      t.same((logoutAll.cookies as Array<{ name: string }>).map(cookie => cookie.name).sort(), ['accessToken', 'refreshToken'], 'cookies cleared')
    }
    for (const session of [laptop, phone]) {
      assertError(t, await server.inject({ method: 'POST', url: '/auth/refresh-token', ...credentials(variant, session) }), 401, 'INVALID_REFRESH_TOKEN')
    }
    const other = await server.inject({ method: 'POST', url: '/auth/refresh-token', ...credentials(variant, someoneElse) })
    t.equal(other.statusCode, 200, 'another user keeps its session')
  })
}
