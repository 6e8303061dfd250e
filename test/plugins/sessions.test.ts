import t from 'tap'
import { build } from '../fixtures/build.js'
import { cookieValue, loggedInUser } from '../fixtures/factories.js'
import { hashToken } from '../../core/tokens/random-token.js'

t.test('50 concurrent refreshes with one token: all answered, exactly one successor, one live session', async (t) => {
  const server = await build(t, { variant: 'cookie' })
  const session = await loggedInUser(server, 'cookie')
  const responses = await Promise.all(Array.from({ length: 50 }, () =>
    server.inject({ method: 'POST', url: '/auth/refresh-token', cookies: { refreshToken: session.refreshToken } })))
  t.same(responses.map(response => response.statusCode), Array(50).fill(200), 'concurrent tabs all get an access token')
  const successors = responses.flatMap(response => (response.cookies as Array<{ name: string, value: string }>)
    .filter(cookie => cookie.name === 'refreshToken').map(cookie => cookie.value))
  t.equal(successors.length, 1, 'exactly one response carries a new refresh token')

  const original = await server.store.findRefreshToken(hashToken(session.refreshToken))
  t.equal(original?.replacedBy, hashToken(successors[0]))
  const successor = await server.store.findRefreshToken(hashToken(successors[0]))
  t.match(successor, { familyId: original?.familyId, rotatedAt: null, revokedAt: null }, 'one live token, in the same session')
})

t.test('refresh keeps working along a chain of rotations', async (t) => {
  const server = await build(t, { variant: 'cookie' })
  let { refreshToken } = await loggedInUser(server, 'cookie')
  for (let step = 0; step < 5; step++) {
    const response = await server.inject({ method: 'POST', url: '/auth/refresh-token', cookies: { refreshToken } })
    t.equal(response.statusCode, 200)
    refreshToken = cookieValue(response, 'refreshToken')
  }
})
