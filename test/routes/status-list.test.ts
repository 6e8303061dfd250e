import { createPublicKey } from 'node:crypto'
import { getListFromStatusListJWT, getStatusListFromJWT } from '@sd-jwt/jwt-status-list'
import { createVerifier } from 'fast-jwt'
import type { FastifyInstance } from 'fastify'
import t from 'tap'
import { build } from '../fixtures/build.js'
import { loggedInUser } from '../fixtures/factories.js'

const PUBLIC_URL = 'https://accounts.example.com'

/** What a resource server does: fetch the uri of the token's claim, verify the list with the JWKS, read the bit. */
async function statusOf (server: FastifyInstance, accessToken: string): Promise<{ status: number, headers: Record<string, unknown>, payload: Record<string, unknown> }> {
  const { idx, uri } = getStatusListFromJWT(accessToken)
  t.ok(uri.startsWith(`${PUBLIC_URL}/statuslists/`), 'an absolute uri under PUBLIC_URL')
  const response = await server.inject({ method: 'GET', url: new URL(uri).pathname, headers: { origin: 'https://api.example.org' } })
  t.equal(response.statusCode, 200)
  const jwt = response.body
  const header = JSON.parse(Buffer.from(jwt.split('.')[0], 'base64url').toString()) as Record<string, unknown>
  t.equal(header.typ, 'statuslist+jwt')
  const jwk = (await server.inject('/.well-known/jwks.json')).json().keys.find((key: { kid: string }) => key.kid === header.kid)
  t.ok(jwk, 'signed by a key of the JWKS')
  const payload = createVerifier({ key: createPublicKey({ key: jwk, format: 'jwk' }).export({ type: 'spki', format: 'pem' }) as string })(jwt) as Record<string, unknown>
  t.equal(payload.sub, uri)
  return { status: getListFromStatusListJWT(jwt).getStatus(idx), headers: response.headers, payload }
}

t.test('the status list, read with a third-party client, shows INVALID after logout and VALID for every other session', async (t) => {
  const server = await build(t, { variant: 'header', env: { PUBLIC_URL, STATUS_LIST_TTL: '45s' } })
  const sessions = [await loggedInUser(server, 'header'), await loggedInUser(server, 'header'), await loggedInUser(server, 'header')]
  const indexes = sessions.map(session => getStatusListFromJWT(session.accessToken).idx)
  t.equal(new Set(indexes).size, 3, 'every session has an index of its own')

  const before = await statusOf(server, sessions[1].accessToken)
  t.equal(before.status, 0, 'VALID')
  t.equal(before.headers['content-type'], 'application/statuslist+jwt')
  t.equal(before.headers['access-control-allow-origin'], '*')
  t.equal(before.payload.ttl, 45)
  t.ok((before.payload.exp as number) - (before.payload.iat as number) >= 60, 'exp a few minutes on')
  t.match(before.payload.status_list, { bits: 1, lst: /^[A-Za-z0-9_-]+$/ })

  const logout = await server.inject({ method: 'POST', url: '/auth/logout', headers: { 'x-refresh-token': `Bearer ${sessions[1].refreshToken}` } })
  t.equal(logout.statusCode, 204)
  // Re-signed at most once a second: a revocation shows at the first signing after it, at most 1 s on
  // (the bound allows for a slow inject on a loaded machine).
  const started = Date.now()
  let status = 0
  while (status === 0 && Date.now() - started <= 1250) {
    status = (await statusOf(server, sessions[1].accessToken)).status
    if (status === 0) await new Promise(resolve => setTimeout(resolve, 50))
  }
  t.equal(status, 1, `INVALID within ${Date.now() - started} ms of the logout`)
  t.equal((await statusOf(server, sessions[0].accessToken)).status, 0, 'the others stay VALID')
  t.equal((await statusOf(server, sessions[2].accessToken)).status, 0)

  const refreshed = await server.inject({ method: 'POST', url: '/auth/refresh-token', headers: { authorization: `Bearer ${sessions[2].accessToken}`, 'x-refresh-token': `Bearer ${sessions[2].refreshToken}` } })
  t.equal(refreshed.statusCode, 200)
  t.same(getStatusListFromJWT(refreshed.json().accessToken), getStatusListFromJWT(sessions[2].accessToken), 'a refreshed token keeps its session\'s index')
})

t.test('the list is cached: If-None-Match gets 304; a bad list number is 400', async (t) => {
  const server = await build(t, { variant: 'header' })
  const session = await loggedInUser(server, 'header')
  const path = new URL(getStatusListFromJWT(session.accessToken).uri).pathname
  const first = await server.inject(path)
  t.equal(first.statusCode, 200)
  t.match(first.headers['cache-control'], /max-age=30/)
  const again = await server.inject({ url: path, headers: { 'if-none-match': String(first.headers.etag) } })
  t.equal(again.statusCode, 304)
  t.equal(again.body, '')
  t.equal((await server.inject(path)).body, first.body, 'nothing changed: the same signed list')
  const bad = await server.inject('/statuslists/0')
  t.equal(bad.statusCode, 400)
  t.equal(bad.json().code, 'VALIDATION_FAILED')
})
