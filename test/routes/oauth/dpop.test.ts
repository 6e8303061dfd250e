import { createHash, randomUUID } from 'node:crypto'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { calculateJwkThumbprint, decodeJwt, exportJWK, generateKeyPair, SignJWT, type CryptoKey } from 'jose'
import * as oauth from 'oauth4webapi'
import * as client from 'openid-client'
import t, { type Test } from 'tap'
import { addResourceServer } from '../../../core/oauth/resource-servers.js'
import { build } from '../../fixtures/build.js'
import { testDatabaseUrl } from '../../fixtures/database.js'
import { registerUser } from '../../fixtures/factories.js'
import { freePort } from '../../fixtures/http.js'
import { addClient, authorizationRequest, authorizeInBrowser, CookieJar, oauthErrorOf, providerService, relyingParty } from '../../fixtures/oauth.js'

// DPoP (RFC 9449) end to end: openid-client's DPoP support as the app, raw proofs where a test needs one
// that openid-client would never make (another key, a replay, a stale or missing nonce).

interface ProofKey { privateKey: CryptoKey, publicKey: CryptoKey }

/** A DPoP proof (RFC 9449 §4.2) of `key` for a request; `ath` binds it to an access token. */
async function proofOf (key: ProofKey, htm: string, htu: string, { accessToken, nonce, iat = Math.floor(Date.now() / 1000), jti = randomUUID() }: { accessToken?: string, nonce?: string, iat?: number, jti?: string } = {}): Promise<string> {
  return await new SignJWT({
    htm,
    htu,
    jti,
    iat,
    ...(accessToken === undefined ? {} : { ath: createHash('sha256').update(accessToken).digest('base64url') }),
    ...(nonce === undefined ? {} : { nonce })
  }).setProtectedHeader({ alg: 'ES256', typ: 'dpop+jwt', jwk: await exportJWK(key.publicKey) }).sign(key.privateKey)
}

const thumbprintOf = async (key: ProofKey) => await calculateJwkThumbprint(await exportJWK(key.publicKey))

/** A user signed in to an app through the browser, the code exchanged with openid-client bound to a DPoP key. */
async function boundApp (t: Test, options: Parameters<typeof addClient>[1] = {}) {
  const { server, baseUrl } = await providerService(t)
  const user = await registerUser(server, 'header', { first_name: 'Grace', last_name: 'Hopper' })
  const app = await addClient(server, { grants: ['authorization_code', 'refresh_token'], ...options })
  const config = await relyingParty(baseUrl, app)
  const key = await client.randomDPoPKeyPair('ES256', { extractable: true }) as ProofKey
  const dpop = client.getDPoPHandle(config, key)
  const request = await authorizationRequest(config, 'openid email profile offline_access', { prompt: 'consent' })
  const callback = await authorizeInBrowser(baseUrl, new CookieJar(), request.url, { person: user })
  const tokens = await client.authorizationCodeGrant(config, callback, { pkceCodeVerifier: request.verifier, expectedState: request.state }, undefined, { DPoP: dpop })
  return { server, baseUrl, user, app, config, key, dpop, tokens, userinfoUrl: `${baseUrl}/oauth/userinfo` }
}

t.test('openid-client with a DPoP key: the token is bound (cnf.jkt), userinfo answers it with its proof', async (t) => {
  const { user, config, key, dpop, tokens } = await boundApp(t)
  t.equal(tokens.token_type, 'dpop', 'token_type DPoP')
  t.same(decodeJwt(tokens.access_token).cnf, { jkt: await thumbprintOf(key) }, 'bound to the app\'s key')
  const userinfo = await client.fetchUserInfo(config, tokens.access_token, String(user.id), { DPoP: dpop })
  t.match(userinfo, { sub: String(user.id), email: user.email, given_name: 'Grace' })
})

t.test('userinfo refuses a bound token as Bearer, with another key\'s proof, a proof for another URL or method, and a replayed proof', async (t) => {
  const { key, tokens, userinfoUrl } = await boundApp(t)
  const token = tokens.access_token
  const asked = async (headers: Record<string, string>) => await fetch(userinfoUrl, { headers })

  const bearer = await asked({ authorization: `Bearer ${token}` })
  t.equal(bearer.status, 401, 'a bound token as Bearer')
  t.match(bearer.headers.get('www-authenticate'), /^DPoP .*error="invalid_token"/, 'the challenge names DPoP')
  t.equal((await bearer.json()).error, 'invalid_token')

  const another = await generateKeyPair('ES256')
  const otherKey = await asked({ authorization: `DPoP ${token}`, dpop: await proofOf(another, 'GET', userinfoUrl, { accessToken: token }) })
  t.equal(otherKey.status, 401, 'a proof of another key')
  t.match(otherKey.headers.get('www-authenticate'), /^DPoP .*error="invalid_token"/)

  t.equal((await asked({ authorization: `DPoP ${token}`, dpop: await proofOf(key, 'GET', `${userinfoUrl}/elsewhere`, { accessToken: token }) })).status, 401, 'a proof for another URL (htu)')
  t.equal((await asked({ authorization: `DPoP ${token}`, dpop: await proofOf(key, 'POST', userinfoUrl, { accessToken: token }) })).status, 401, 'a proof for another method (htm)')
  t.equal((await asked({ authorization: `DPoP ${token}`, dpop: await proofOf(key, 'GET', userinfoUrl) })).status, 401, 'a proof without the token\'s hash (ath)')
  t.equal((await asked({ authorization: `DPoP ${token}` })).status, 400, 'the DPoP scheme without a proof')

  const proof = await proofOf(key, 'GET', userinfoUrl, { accessToken: token })
  t.equal((await asked({ authorization: `DPoP ${token}`, dpop: proof })).status, 200, 'the key\'s own proof')
  const replayed = await asked({ authorization: `DPoP ${token}`, dpop: proof })
  t.equal(replayed.status, 401, 'the same proof again')
  t.match(replayed.headers.get('www-authenticate'), /^DPoP .*error="invalid_token"/)
})

t.test('an unbound token stays a Bearer token: userinfo takes it as Bearer and refuses it with the DPoP scheme', async (t) => {
  const { server, baseUrl } = await providerService(t)
  const user = await registerUser(server, 'header')
  const config = await relyingParty(baseUrl, await addClient(server))
  const request = await authorizationRequest(config, 'openid email')
  const callback = await authorizeInBrowser(baseUrl, new CookieJar(), request.url, { person: user })
  const tokens = await client.authorizationCodeGrant(config, callback, { pkceCodeVerifier: request.verifier, expectedState: request.state })
  t.equal(decodeJwt(tokens.access_token).cnf, undefined)
  t.equal((await fetch(`${baseUrl}/oauth/userinfo`, { headers: { authorization: `Bearer ${tokens.access_token}` } })).status, 200)
  const key = await generateKeyPair('ES256')
  const asDpop = await fetch(`${baseUrl}/oauth/userinfo`, {
    headers: { authorization: `DPoP ${tokens.access_token}`, dpop: await proofOf(key, 'GET', `${baseUrl}/oauth/userinfo`, { accessToken: tokens.access_token }) }
  })
  t.equal(asDpop.status, 401, 'a proof with a token bound to no key proves nothing')
})

t.test('nonces: the token endpoint asks for one (use_dpop_nonce) and takes the proof that carries it; userinfo asks for one for a stale proof', async (t) => {
  const { server, baseUrl } = await providerService(t)
  const app = await addClient(server, { grants: ['client_credentials'], redirectUris: [] })
  const key = await generateKeyPair('ES256')
  const tokenUrl = `${baseUrl}/oauth/token`
  const tokenRequest = async (proof: string) => await fetch(tokenUrl, {
    method: 'POST',
    headers: { authorization: `Basic ${Buffer.from(`${app.clientId}:${app.clientSecret ?? ''}`).toString('base64')}`, 'content-type': 'application/x-www-form-urlencoded', dpop: proof },
    body: new URLSearchParams({ grant_type: 'client_credentials' })
  })

  const asked = await tokenRequest(await proofOf(key, 'POST', tokenUrl))
  t.equal(asked.status, 400)
  t.equal((await asked.json()).error, 'use_dpop_nonce', 'a proof without a nonce is asked for one')
  const nonce = asked.headers.get('dpop-nonce')
  t.ok(nonce, 'given in DPoP-Nonce')
  t.equal((await (await tokenRequest(await proofOf(key, 'POST', tokenUrl, { nonce: 'made-up' }))).json()).error, 'use_dpop_nonce', 'a nonce the service did not issue is refused')
  const granted = await tokenRequest(await proofOf(key, 'POST', tokenUrl, { nonce: nonce ?? '' }))
  t.equal(granted.status, 200, 'the proof with the nonce is taken')
  const body = await granted.json()
  t.equal(body.token_type, 'DPoP')
  t.same(decodeJwt(body.access_token).cnf, { jkt: await thumbprintOf(key) })

  // openid-client handles the nonce itself: it retries once with the one the service gave.
  const config = await relyingParty(baseUrl, app)
  const tokens = await client.clientCredentialsGrant(config, {}, { DPoP: client.getDPoPHandle(config, await client.randomDPoPKeyPair()) })
  t.equal(tokens.token_type, 'dpop')

  const { key: userKey, tokens: userTokens, userinfoUrl } = await boundApp(t)
  const stale = await fetch(userinfoUrl, {
    headers: { authorization: `DPoP ${userTokens.access_token}`, dpop: await proofOf(userKey, 'GET', userinfoUrl, { accessToken: userTokens.access_token, iat: Math.floor(Date.now() / 1000) - 600 }) }
  })
  t.equal(stale.status, 401, 'a proof made ten minutes ago')
  t.match(stale.headers.get('www-authenticate'), /error="use_dpop_nonce"/)
  const userinfoNonce = stale.headers.get('dpop-nonce') ?? ''
  t.ok(userinfoNonce)
  const withNonce = await fetch(userinfoUrl, {
    headers: { authorization: `DPoP ${userTokens.access_token}`, dpop: await proofOf(userKey, 'GET', userinfoUrl, { accessToken: userTokens.access_token, iat: Math.floor(Date.now() / 1000) - 600, nonce: userinfoNonce }) }
  })
  t.equal(withNonce.status, 200, 'the same old proof with the service\'s nonce is taken')
})

t.test('a nonce issued by one instance is taken by another (the nonce secret comes from the store)', async (t) => {
  const databaseUrl = await testDatabaseUrl(t, { persistent: true })
  const ports = [await freePort(), await freePort()]
  const issuer = `http://localhost:${ports[0]}`
  const servers = []
  for (const port of ports) {
    const server = await build(t, { variant: 'header', env: { DATABASE_URL: databaseUrl, PUBLIC_URL: issuer, COOKIE_SECURE: 'false' } })
    await server.listen({ port, host: 'localhost' })
    servers.push(server)
  }
  const app = await addClient(servers[0], { grants: ['client_credentials'], redirectUris: [] })
  const key = await generateKeyPair('ES256')
  const tokenUrl = `${issuer}/oauth/token`
  const tokenRequest = async (port: number, proof: string) => await fetch(`http://localhost:${port}/oauth/token`, {
    method: 'POST',
    headers: { authorization: `Basic ${Buffer.from(`${app.clientId}:${app.clientSecret ?? ''}`).toString('base64')}`, 'content-type': 'application/x-www-form-urlencoded', dpop: proof },
    body: new URLSearchParams({ grant_type: 'client_credentials' })
  })
  const nonce = (await tokenRequest(ports[0], await proofOf(key, 'POST', tokenUrl))).headers.get('dpop-nonce') ?? ''
  t.ok(nonce)
  t.equal((await tokenRequest(ports[1], await proofOf(key, 'POST', tokenUrl, { nonce }))).status, 200)
})

t.test('introspection names the key a token is bound to (cnf.jkt) and its type (DPoP); an unbound one is Bearer', async (t) => {
  const { server, baseUrl, config, key, tokens } = await boundApp(t)
  const introspected = await client.tokenIntrospection(config, tokens.access_token)
  t.match(introspected, { active: true, token_type: 'DPoP', cnf: { jkt: await thumbprintOf(key) } })

  const machine = await relyingParty(baseUrl, await addClient(server, { grants: ['client_credentials'], redirectUris: [] }))
  const plain = await client.clientCredentialsGrant(machine)
  const unbound = await client.tokenIntrospection(machine, plain.access_token)
  t.match(unbound, { active: true, token_type: 'Bearer' })
  t.equal(unbound.cnf, undefined)
})

t.test('a public client\'s DPoP-bound refresh token refreshes only with the same key', async (t) => {
  const { config, key, dpop, tokens } = await boundApp(t, { public: true })
  const otherKey = client.getDPoPHandle(config, await client.randomDPoPKeyPair())
  t.equal(await oauthErrorOf(client.refreshTokenGrant(config, tokens.refresh_token as string, undefined, { DPoP: otherKey })), 'invalid_grant', 'another key')
  t.equal(await oauthErrorOf(client.refreshTokenGrant(config, tokens.refresh_token as string)), 'invalid_grant', 'no key')
  const refreshed = await client.refreshTokenGrant(config, tokens.refresh_token as string, undefined, { DPoP: dpop })
  t.same(decodeJwt(refreshed.access_token).cnf, { jkt: await thumbprintOf(key) }, 'the same key refreshes, and the new token is bound to it')
})

/**
 * One of the team's APIs checking the service's tokens, as docs/oauth.md's recipe does (oauth4webapi's
 * validateJwtAccessToken, and a proof's jti remembered against replay), listening on a port of its own.
 */
async function teamApi (t: Test, issuer: string, audience: string): Promise<string> {
  // Plain HTTP is for this test only (the service is on localhost); the recipe has no such option.
  const insecure = { [oauth.allowInsecureRequests]: true }
  const as = await oauth.processDiscoveryResponse(new URL(issuer), await oauth.discoveryRequest(new URL(issuer), insecure))
  const seen = new Map<string, number>()
  async function checkAccessToken (request: Request) {
    const claims = await oauth.validateJwtAccessToken(as, request, audience, insecure)
    if (claims.cnf?.jkt !== undefined) {
      const { jti, iat } = decodeJwt(request.headers.get('dpop') ?? '')
      const proofId = `${claims.cnf.jkt}:${String(jti)}`
      if (seen.has(proofId)) throw new Error('DPoP proof replayed')
      seen.set(proofId, (iat ?? 0) + 300)
    }
    return claims
  }
  const server = createServer((req, res) => {
    const headers = new Headers()
    for (const [name, value] of Object.entries(req.headers)) if (typeof value === 'string') headers.set(name, value)
    const url = `http://localhost:${(server.address() as AddressInfo).port}${req.url ?? '/'}`
    checkAccessToken(new Request(url, { method: req.method, headers })).then(claims => {
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ sub: claims.sub, scope: claims.scope }))
    }, () => {
      res.writeHead(401, { 'www-authenticate': 'DPoP error="invalid_token"' }).end()
    })
  })
  server.listen(0, 'localhost')
  await new Promise(resolve => server.once('listening', resolve))
  t.teardown(() => { server.close() })
  return `http://localhost:${(server.address() as AddressInfo).port}/orders`
}

t.test('an API of the team checks a bound token as docs/oauth.md shows (oauth4webapi): the key\'s proof passes; Bearer, another key and a replay do not', async (t) => {
  const { server, baseUrl } = await providerService(t)
  const apiUrl = await teamApi(t, baseUrl, 'https://api.example.com/orders')
  await addResourceServer(server.store, { uri: 'https://api.example.com/orders', scopes: ['orders:read'] }, new Date())
  const machine = await relyingParty(baseUrl, await addClient(server, { grants: ['client_credentials'], redirectUris: [] }))
  const key = await client.randomDPoPKeyPair('ES256', { extractable: true }) as ProofKey
  const dpop = client.getDPoPHandle(machine, key)
  const { access_token: token } = await client.clientCredentialsGrant(machine, { resource: 'https://api.example.com/orders', scope: 'orders:read' }, { DPoP: dpop })

  const answer = await client.fetchProtectedResource(machine, token, new URL(apiUrl), 'GET', undefined, undefined, { DPoP: dpop })
  t.equal(answer.status, 200, 'openid-client\'s DPoP request')
  t.match(await answer.json(), { scope: 'orders:read' })
  t.equal((await fetch(apiUrl, { headers: { authorization: `Bearer ${token}` } })).status, 401, 'the bound token as Bearer')
  const another = await generateKeyPair('ES256')
  t.equal((await fetch(apiUrl, { headers: { authorization: `DPoP ${token}`, dpop: await proofOf(another, 'GET', apiUrl, { accessToken: token }) } })).status, 401, 'another key\'s proof')
  const proof = await proofOf(key, 'GET', apiUrl, { accessToken: token })
  t.equal((await fetch(apiUrl, { headers: { authorization: `DPoP ${token}`, dpop: proof } })).status, 200)
  t.equal((await fetch(apiUrl, { headers: { authorization: `DPoP ${token}`, dpop: proof } })).status, 401, 'the same proof again')
})

t.test('discovery advertises DPoP', async (t) => {
  const { baseUrl } = await providerService(t)
  const discovery = await (await fetch(`${baseUrl}/.well-known/openid-configuration`)).json()
  t.ok(discovery.dpop_signing_alg_values_supported.includes('ES256'))
})
