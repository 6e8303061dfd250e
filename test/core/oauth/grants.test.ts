import t, { type Test } from 'tap'
import { createAdapterClass, STATUS_INDEX_FIELD } from '../../../core/oauth/adapter.js'
import { clientSecretMatches, hashClientSecret, newClient } from '../../../core/oauth/clients.js'
import { createGrantSessions, grantSessionId } from '../../../core/oauth/grant-sessions.js'
import { createRevocations } from '../../../core/revocations/revocations.js'
import { silentLogger } from '../../../core/logger.js'
import { testClock } from '../../fixtures/clock.js'
import { testStore } from '../../fixtures/database.js'

// The adapter's two rules beyond storing (core/oauth/adapter.ts): a client secret is stored hashed,
// and a grant is one of the user's sessions, so that what ends sessions ends grants.

async function setUp (t: Test) {
  const opened = await testStore(t)
  const clock = testClock()
  const { store, revocations, close } = await createRevocations({ store: opened, clock, log: silentLogger }, { accessTokenTtlSeconds: 900 })
  t.teardown(close)
  const grantSessions = createGrantSessions({ store, revocations, clock })
  const Adapter = createAdapterClass({ store, grantSessions, clock })
  const user = await store.createUser({ firstName: 'Ada', lastName: 'Lovelace', username: null, email: 'ada@example.com', passwordHash: null })
  return { store, clock, grantSessions, Adapter, user }
}

t.test('a new grant starts a session of its user with a status index; a second save keeps both', async (t) => {
  const { store, Adapter, user } = await setUp(t)
  const grants = new Adapter('Grant')
  await grants.upsert('g1', { accountId: String(user.id), clientId: 'app', openid: { scope: 'openid' } }, 3600)
  const session = await store.findSession(grantSessionId('g1'))
  t.equal(session?.userId, user.id, 'the grant is a session of its user')
  const stored = await grants.find('g1')
  const statusIndex = stored?.[STATUS_INDEX_FIELD]
  t.type(statusIndex, 'number', 'with a status index')
  await grants.upsert('g1', { accountId: String(user.id), clientId: 'app', openid: { scope: 'openid email' } }, 3600)
  t.equal((await grants.find('g1'))?.[STATUS_INDEX_FIELD], statusIndex, 'saving again keeps the index')
  t.equal((await store.listLiveSessions(user.id, new Date())).length, 1, 'and makes no second session')
})

t.test('ending the user\'s sessions ends the grant: it and its refresh tokens are no longer found', async (t) => {
  const { store, clock, Adapter, user } = await setUp(t)
  const grants = new Adapter('Grant')
  const refreshTokens = new Adapter('RefreshToken')
  await grants.upsert('g1', { accountId: String(user.id), clientId: 'app' }, 3600)
  await refreshTokens.upsert('r1', { grantId: 'g1', accountId: String(user.id), clientId: 'app' }, 3600)
  t.ok(await refreshTokens.find('r1'))
  await store.revokeUserSessions(user.id, new Date(clock.now()))
  t.equal(await grants.find('g1'), undefined)
  t.equal(await refreshTokens.find('r1'), undefined)
})

t.test('revokeByGrantId ends the session (its bit in the status list) and deletes the grant\'s models', async (t) => {
  const { store, clock, Adapter, user } = await setUp(t)
  const grants = new Adapter('Grant')
  const codes = new Adapter('AuthorizationCode')
  await grants.upsert('g1', { accountId: String(user.id), clientId: 'app' }, 3600)
  await grants.upsert('g2', { accountId: String(user.id), clientId: 'other' }, 3600)
  await codes.upsert('c1', { grantId: 'g1' }, 60)
  await codes.revokeByGrantId('g1')
  t.equal(await store.sessionState(grantSessionId('g1'), new Date(clock.now())), 'revoked')
  t.same(await store.listOAuthModels('AuthorizationCode', new Date(clock.now())), [], 'its code is deleted (stored under its hash)')
  t.ok(await grants.find('g2'), 'another grant of the user is untouched')
})

t.test('a consumed model is found with `consumed` set, as oidc-provider expects', async (t) => {
  const { Adapter } = await setUp(t)
  const codes = new Adapter('AuthorizationCode')
  await codes.upsert('c1', { accountId: '1' }, 60)
  t.equal((await codes.find('c1'))?.consumed, undefined)
  await codes.consume('c1')
  t.type((await codes.find('c1'))?.consumed, 'number')
})

t.test('a client\'s secret is stored as its hash and still matches', async (t) => {
  const { store, Adapter } = await setUp(t)
  await new Adapter('Client').upsert('app', { client_id: 'app', client_secret: 'the secret the app was given' })
  const stored = String((await store.findOAuthModel('Client', 'app', new Date()))?.payload.client_secret)
  t.not(stored, 'the secret the app was given')
  t.ok(clientSecretMatches(stored, 'the secret the app was given'))
  t.notOk(clientSecretMatches(stored, 'another secret'))
  t.notOk(clientSecretMatches(stored, stored), 'the stored hash itself is not a secret that matches')
  t.equal(hashClientSecret(stored), stored, 'a hash is not hashed twice')
})

t.test('newClient: a public client has no secret; the response types follow the grants', async (t) => {
  const spa = newClient({ name: 'SPA', redirectUris: ['https://app.example/cb'], public: true, trusted: false })
  t.equal(spa.secret, undefined)
  t.equal(spa.metadata.token_endpoint_auth_method, 'none')
  const machine = newClient({ name: 'Cron', redirectUris: [], public: false, trusted: false, grants: ['client_credentials'] })
  t.same(machine.metadata.response_types, [])
  t.ok(machine.secret)
  t.match(machine.metadata.client_id, /^[0-9a-f]{32}$/)
})

t.test('a code consumed by another request since oidc-provider read it: the consumption throws, and the grant made from it ends', async (t) => {
  const { store, clock, grantSessions, Adapter, user } = await setUp(t)
  const grants = new Adapter('Grant')
  const codes = new Adapter('AuthorizationCode')
  await grants.upsert('g1', { accountId: String(user.id), clientId: 'app' }, 3600)
  await codes.upsert('c1', { grantId: 'g1' }, 60)
  // Two requests read the code before either consumes it (oidc-provider finds it unconsumed for both).
  t.notOk((await codes.find('c1'))?.consumed)
  t.notOk((await codes.find('c1'))?.consumed)
  await codes.consume('c1')
  await t.rejects(codes.consume('c1'), /AuthorizationCode already consumed/, 'the second is refused')
  t.equal(await store.sessionState(grantSessionId('g1'), new Date(clock.now())), 'revoked', 'the grant\'s session ended')
  t.equal(await grants.find('g1'), undefined, 'and the grant is gone')

  const Answering = createAdapterClass({ store, grantSessions, clock, usedAgain: (kind) => new Error(`the provider's error for ${kind}`) })
  const pushed = new Answering('PushedAuthorizationRequest')
  await pushed.upsert('p1', { clientId: 'app' }, 60)
  await pushed.consume('p1')
  await t.rejects(pushed.consume('p1'), { message: 'the provider\'s error for PushedAuthorizationRequest' }, 'with the error the provider gives it (a model of no grant: nothing else ends)')
})
