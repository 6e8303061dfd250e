import t from 'tap'
import { silentLogger } from '../../../core/logger.js'
import { createAccessTokens, type TokensOptions } from '../../../core/tokens/access-tokens.js'
import { rotateSigningKey } from '../../../core/tokens/keys.js'
import { testClock } from '../../fixtures/clock.js'
import { testStore } from '../../fixtures/database.js'
import { decodePart } from '../../fixtures/jwt.js'

const options: TokensOptions = {
  accessTokenTtlSeconds: 60,
  issuer: 'account-service',
  audience: 'account-service',
  reloadIntervalSeconds: 3600,
  rotateAfterSeconds: 0
}

const claims = { userId: 7, sessionId: 'session-7' }

t.test('a signed token verifies to whose it is, its session and its status claim', async (t) => {
  const clock = testClock()
  const tokens = await createAccessTokens({ store: await testStore(t), clock, log: silentLogger }, options)
  t.teardown(() => tokens.close())
  const status = { status_list: { idx: 3, uri: 'https://accounts.example.com/statuslists/1' } }
  const token = tokens.sign({ ...claims, status })
  t.match(decodePart(token, 1), { sub: '7', sid: 'session-7', iat: Math.floor(clock.now() / 1000), iss: 'account-service', aud: 'account-service' })
  t.same(await tokens.verify(token), { ...claims, status })
})

t.test('a token is TOKEN_EXPIRED the millisecond after its exp; allowExpired still takes it', async (t) => {
  const clock = testClock()
  const tokens = await createAccessTokens({ store: await testStore(t), clock, log: silentLogger }, options)
  t.teardown(() => tokens.close())
  const token = tokens.sign(claims)
  clock.advance(decodePart(token, 1).exp * 1000 - clock.now())
  t.same(await tokens.verify(token), { ...claims, status: undefined }, 'good at its exp')
  clock.advance(1)
  await t.rejects(tokens.verify(token), { code: 'TOKEN_EXPIRED' })
  t.same(await tokens.verify(token, { allowExpired: true }), { ...claims, status: undefined })
})

t.test('a token issued more than 1 s ahead of our clock is INVALID_TOKEN', async (t) => {
  const store = await testStore(t)
  const clock = testClock()
  const tokens = await createAccessTokens({ store, clock, log: silentLogger }, options)
  t.teardown(() => tokens.close())
  // Another instance on the same keys, its clock ahead.
  const ahead = await createAccessTokens({ store, clock: testClock(clock.now() + 2000), log: silentLogger }, options)
  t.teardown(() => ahead.close())
  await t.rejects(tokens.verify(ahead.sign(claims)), { code: 'INVALID_TOKEN' })
  const slightlyAhead = await createAccessTokens({ store, clock: testClock(clock.now() + 500), log: silentLogger }, options)
  t.teardown(() => slightlyAhead.close())
  t.ok(await tokens.verify(slightlyAhead.sign(claims)), 'within the leeway')
})

t.test('our key for another audience or issuer, no JWT, no kid, or an unknown kid: INVALID_TOKEN', async (t) => {
  const store = await testStore(t)
  const tokens = await createAccessTokens({ store, clock: testClock(), log: silentLogger }, options)
  t.teardown(() => tokens.close())
  for (const other of [{ audience: 'another-service' }, { issuer: 'someone-else' }]) {
    const elsewhere = await createAccessTokens({ store, clock: testClock(), log: silentLogger }, { ...options, ...other })
    t.teardown(() => elsewhere.close())
    await t.rejects(tokens.verify(elsewhere.sign(claims)), { code: 'INVALID_TOKEN' }, JSON.stringify(other))
  }
  const [, payload, signature] = tokens.sign(claims).split('.')
  const withHeader = (header: object) => [Buffer.from(JSON.stringify(header)).toString('base64url'), payload, signature].join('.')
  for (const token of ['not-a-jwt', withHeader({ alg: 'EdDSA' }), withHeader({ alg: 'EdDSA', kid: 'not-ours' })]) {
    await t.rejects(tokens.verify(token), { code: 'INVALID_TOKEN' }, token.slice(0, 20))
  }
})

t.test('a token whose subject is not a user id is INVALID_TOKEN, though signed by us', async (t) => {
  const tokens = await createAccessTokens({ store: await testStore(t), clock: testClock(), log: silentLogger }, options)
  t.teardown(() => tokens.close())
  for (const userId of [0, -1, 1.5]) {
    await t.rejects(tokens.verify(tokens.sign({ ...claims, userId })), { code: 'INVALID_TOKEN' }, String(userId))
  }
})

t.test('a verified token is kept by the token itself until its exp, within a bound', async (t) => {
  const clock = testClock()
  const tokens = await createAccessTokens({ store: await testStore(t), clock, log: silentLogger }, { ...options, verifiedTokensMax: 2 })
  t.teardown(() => tokens.close())
  const token = tokens.sign(claims)
  t.equal(tokens.verifiedBefore(token), undefined, 'not before its first verification')
  const verified = await tokens.verify(token)
  t.same(tokens.verifiedBefore(token), verified, 'then from memory')
  t.ok(Object.isFrozen(verified), 'the kept claims cannot be changed by a caller')
  const [, signature] = /\.([^.]+)$/.exec(token) ?? []
  const tampered = token.slice(0, -signature.length) + (signature[0] === 'A' ? 'B' : 'A') + signature.slice(1)
  t.equal(tokens.verifiedBefore(tampered), undefined, 'a token differing by one character is another key')
  await t.rejects(tokens.verify(tampered), { code: 'INVALID_TOKEN' })
  // The same signature on another payload (an attacker's edit of the claims): not the kept token.
  const [header, , sig] = token.split('.')
  const otherClaims = Buffer.from(JSON.stringify({ ...decodePart(token, 1), sub: '8' })).toString('base64url')
  const forged = `${header}.${otherClaims}.${sig}`
  t.equal(tokens.verifiedBefore(forged), undefined, 'a copied signature on other claims is not taken for the kept token')
  await t.rejects(tokens.verify(forged), { code: 'INVALID_TOKEN' })
  t.ok(tokens.verifiedBefore(token), 'and the kept token is still there')

  clock.advance(decodePart(token, 1).exp * 1000 - clock.now())
  t.ok(tokens.verifiedBefore(token), 'good at its exp')
  clock.advance(1)
  t.equal(tokens.verifiedBefore(token), undefined, 'dropped the millisecond after')
  await t.rejects(tokens.verify(token), { code: 'TOKEN_EXPIRED' })

  const others = [tokens.sign({ userId: 8, sessionId: 'session-8' }), tokens.sign({ userId: 9, sessionId: 'session-9' }), tokens.sign({ userId: 10, sessionId: 'session-10' })]
  for (const other of others) await tokens.verify(other)
  t.equal(tokens.verifiedBefore(others[0]), undefined, 'the least recently used goes past the bound')
  t.ok(tokens.verifiedBefore(others[2]))
})

t.test('after the keys change (a rotation read), a kept token is verified again', async (t) => {
  const store = await testStore(t)
  const clock = testClock()
  const tokens = await createAccessTokens({ store, clock, log: silentLogger }, options)
  t.teardown(() => tokens.close())
  const token = tokens.sign(claims)
  await tokens.verify(token)
  await tokens.reloadKeys()
  t.ok(tokens.verifiedBefore(token), 'a reload that changes nothing keeps it')
  clock.advance(1)
  await rotateSigningKey(store, { now: new Date(clock.now()) })
  await tokens.reloadKeys()
  t.equal(tokens.verifiedBefore(token), undefined, 'a rotation drops it')
  t.same(await tokens.verify(token), { ...claims, status: undefined }, 'its key still verifies it')
})

t.test("an app's token (at+jwt) verifies with the same keys and clock rules; it is never taken for a service token", async (t) => {
  const { SignJWT, importJWK } = await import('jose')
  const clock = testClock()
  const tokens = await createAccessTokens({ store: await testStore(t), clock, log: silentLogger }, options)
  t.teardown(() => tokens.close())
  const issuer = 'https://accounts.example.com'
  const apps = tokens.appTokenVerifier(issuer)
  const { service } = await tokens.providerKeys()
  const key = await importJWK(service, service.alg)
  const iat = Math.floor(clock.now() / 1000)
  const appToken = (claims: Record<string, unknown>, typ = 'at+jwt') => new SignJWT({ client_id: 'app-1', jti: 'j-1', ...claims })
    .setProtectedHeader({ alg: service.alg, kid: service.kid, typ })
    .setSubject('7').setIssuer(issuer).setAudience('https://api.example.com').setIssuedAt(iat).setExpirationTime(iat + 60)
    .sign(key)

  const token = await appToken({ scope: 'openid' })
  t.equal(apps.verifiedBefore(token), undefined, 'not before its first verification')
  t.match(await apps.verify(token), { sub: '7', client_id: 'app-1', aud: 'https://api.example.com', scope: 'openid' })
  t.ok(apps.verifiedBefore(token), 'then from memory')
  await t.rejects(tokens.verify(token), { code: 'INVALID_TOKEN' }, 'an app token is not a service token')
  await t.rejects(apps.verify(tokens.sign(claims)), { code: 'INVALID_TOKEN' }, 'nor a service token an app token')
  await t.rejects(apps.verify(await appToken({}, 'JWT')), { code: 'INVALID_TOKEN' }, 'another typ')
  await t.rejects(tokens.appTokenVerifier('https://elsewhere.example.com').verify(token), { code: 'INVALID_TOKEN' }, 'another issuer')
  clock.advance(60_001)
  t.equal(apps.verifiedBefore(token), undefined, 'forgotten after its exp')
  await t.rejects(apps.verify(token), { code: 'TOKEN_EXPIRED' })
})

t.test('the active organisation rides in the token as signed; an org claim of another shape makes the token INVALID_TOKEN', async (t) => {
  const tokens = await createAccessTokens({ store: await testStore(t), clock: testClock(), log: silentLogger }, options)
  t.teardown(() => tokens.close())
  const org = { id: 4, slug: 'acme', role: 'admin' }
  const token = tokens.sign({ ...claims, org })
  t.same(decodePart(token, 1).org, org)
  t.same((await tokens.verify(token)).org, org)
  t.equal(decodePart(tokens.sign(claims), 1).org, undefined, 'none without one')
  for (const bad of [{ id: '4', slug: 'acme', role: 'admin' }, { id: 4, role: 'admin' }, 'acme', null]) {
    const forged = tokens.sign({ ...claims, org: bad as unknown as typeof org })
    await t.rejects(tokens.verify(forged), { code: 'INVALID_TOKEN' }, `org ${JSON.stringify(bad)}`)
  }
})
