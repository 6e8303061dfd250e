import t from 'tap'
import { testStore } from '../fixtures/database.js'

// The OAuth provider's models (db/store/oauth.ts): what oidc-provider's adapter needs of the store.
const now = new Date('2026-06-01T12:00:00.000Z')
const later = (seconds: number) => new Date(now.getTime() + seconds * 1000)

t.test('a model is found again with its payload, its expiry and no consumption; kinds keep their ids apart', async (t) => {
  const store = await testStore(t)
  const payload = {
    jti: 'code-1',
    kind: 'AuthorizationCode',
    grantId: 'grant-1',
    accountId: 'user-7',
    scope: 'openid email',
    claims: { id_token: { email: null } },
    nested: [1, 2.5, true, null, { deep: ['x'] }],
    // Characters a name may carry: beyond ASCII, and a NUL (which jsonb would refuse).
    name: 'Zoë \u{1F600} a\u0000b'
  }
  await store.upsertOAuthModel('AuthorizationCode', 'code-1', payload, later(60))
  t.same(await store.findOAuthModel('AuthorizationCode', 'code-1', now), { id: 'code-1', payload, expiresAt: later(60), consumedAt: null })
  t.equal(await store.findOAuthModel('AuthorizationCode', 'code-2', now), undefined, 'an unknown id')
  t.equal(await store.findOAuthModel('RefreshToken', 'code-1', now), undefined, 'the same id of another kind')

  await store.upsertOAuthModel('Client', 'app', { client_id: 'app', redirect_uris: ['https://app.example/cb'] }, null)
  t.same(await store.findOAuthModel('Client', 'app', now), { id: 'app', payload: { client_id: 'app', redirect_uris: ['https://app.example/cb'] }, expiresAt: null, consumedAt: null })
})

t.test('replacing a model replaces its payload, expiry and lookups, and keeps it consumed', async (t) => {
  const store = await testStore(t)
  await store.upsertOAuthModel('RefreshToken', 'rt-1', { grantId: 'grant-1', accountId: 'user-1', rotations: 0 }, later(60))
  await store.consumeOAuthModel('RefreshToken', 'rt-1', now)
  await store.upsertOAuthModel('RefreshToken', 'rt-1', { grantId: 'grant-2', accountId: 'user-2', rotations: 1 }, later(120))
  t.same(await store.findOAuthModel('RefreshToken', 'rt-1', now), { id: 'rt-1', payload: { grantId: 'grant-2', accountId: 'user-2', rotations: 1 }, expiresAt: later(120), consumedAt: now })

  await store.destroyOAuthModelsOfGrant('grant-1')
  t.ok(await store.findOAuthModel('RefreshToken', 'rt-1', now), 'its old grant is no longer its grant')
  t.same((await store.listOAuthModels('RefreshToken', now, { accountId: 'user-1' })), [], 'nor its old account')
  t.equal((await store.listOAuthModels('RefreshToken', now, { accountId: 'user-2' })).length, 1)
  await store.destroyOAuthModelsOfGrant('grant-2')
  t.equal(await store.findOAuthModel('RefreshToken', 'rt-1', now), undefined, 'its new grant is')
})

t.test('a model is not found from its expiry on; one without expiry never expires', async (t) => {
  const store = await testStore(t)
  await store.upsertOAuthModel('AccessToken', 'at-1', {}, later(60))
  await store.upsertOAuthModel('AccessToken', 'forever', {}, null)
  t.ok(await store.findOAuthModel('AccessToken', 'at-1', later(59)))
  t.equal(await store.findOAuthModel('AccessToken', 'at-1', later(60)), undefined, 'expired at its expiry')
  t.equal(await store.findOAuthModel('AccessToken', 'at-1', later(61)), undefined)
  t.ok(await store.findOAuthModel('AccessToken', 'forever', later(10 * 365 * 86_400)))
  await store.upsertOAuthModel('AccessToken', 'at-1', {}, later(120))
  t.ok(await store.findOAuthModel('AccessToken', 'at-1', later(61)), 'a replaced expiry counts')
})

t.test('consuming marks a model consumed once (it is still found); destroying removes that model only', async (t) => {
  const store = await testStore(t)
  await store.upsertOAuthModel('AuthorizationCode', 'code-1', { grantId: 'grant-1' }, later(60))
  await store.upsertOAuthModel('AuthorizationCode', 'code-2', { grantId: 'grant-1' }, later(60))
  await store.upsertOAuthModel('RefreshToken', 'code-1', { grantId: 'grant-1' }, later(60))

  t.equal(await store.consumeOAuthModel('AuthorizationCode', 'code-1', now), true, 'the first consumption is this call\'s')
  t.same((await store.findOAuthModel('AuthorizationCode', 'code-1', later(1)))?.consumedAt, now)
  t.equal(await store.consumeOAuthModel('AuthorizationCode', 'code-1', later(30)), false, 'a second is refused')
  t.same((await store.findOAuthModel('AuthorizationCode', 'code-1', later(31)))?.consumedAt, now, 'the first consumption stays')
  t.equal((await store.findOAuthModel('AuthorizationCode', 'code-2', now))?.consumedAt, null, 'another id is not consumed')
  t.equal((await store.findOAuthModel('RefreshToken', 'code-1', now))?.consumedAt, null, 'nor the same id of another kind')
  t.equal(await store.consumeOAuthModel('AuthorizationCode', 'none', now), false, 'nor is a model that is not there')
  const racing = await Promise.all([1, 2, 3].map(() => store.consumeOAuthModel('AuthorizationCode', 'code-2', now)))
  t.equal(racing.filter((consumed) => consumed).length, 1, 'of three calls at once, one consumes')

  await store.destroyOAuthModel('AuthorizationCode', 'code-1')
  t.equal(await store.findOAuthModel('AuthorizationCode', 'code-1', now), undefined)
  t.ok(await store.findOAuthModel('AuthorizationCode', 'code-2', now), 'another id stays')
  t.ok(await store.findOAuthModel('RefreshToken', 'code-1', now), 'the same id of another kind stays')
  await store.destroyOAuthModel('AuthorizationCode', 'code-1')
})

t.test('destroying a grant deletes its models of every kind, and nothing of another grant', async (t) => {
  const store = await testStore(t)
  await store.upsertOAuthModel('Grant', 'grant-1', { accountId: 'user-1' }, later(600))
  await store.upsertOAuthModel('AuthorizationCode', 'code-1', { grantId: 'grant-1' }, later(60))
  await store.upsertOAuthModel('RefreshToken', 'rt-1', { grantId: 'grant-1' }, later(600))
  await store.upsertOAuthModel('AccessToken', 'at-1', { grantId: 'grant-1' }, later(60))
  await store.upsertOAuthModel('RefreshToken', 'rt-2', { grantId: 'grant-2' }, later(600))
  await store.upsertOAuthModel('AccessToken', 'at-2', { grantId: 'grant-2' }, later(60))
  await store.upsertOAuthModel('Client', 'app', { client_id: 'app' }, null)

  await store.destroyOAuthModelsOfGrant('grant-1')
  for (const [kind, id] of [['AuthorizationCode', 'code-1'], ['RefreshToken', 'rt-1'], ['AccessToken', 'at-1']]) {
    t.equal(await store.findOAuthModel(kind, id, now), undefined, `${kind} ${id} is gone`)
  }
  // oidc-provider keeps a grant's own row by its id (the Grant model has no grantId of its own); it destroys it by id.
  t.ok(await store.findOAuthModel('Grant', 'grant-1', now), 'a model without grantId is not the grant\'s')
  for (const [kind, id] of [['RefreshToken', 'rt-2'], ['AccessToken', 'at-2'], ['Client', 'app']]) {
    t.ok(await store.findOAuthModel(kind, id, now), `${kind} ${id} stays`)
  }
})

t.test('a device code is found by its user code, a session by its uid, within the kind and unless expired', async (t) => {
  const store = await testStore(t)
  await store.upsertOAuthModel('DeviceCode', 'dc-1', { userCode: 'ABCD-EFGH', grantId: 'grant-1' }, later(60))
  await store.upsertOAuthModel('DeviceCode', 'dc-2', { userCode: 'WXYZ-1234' }, later(60))
  await store.upsertOAuthModel('Session', 'session-1', { uid: 'uid-1', accountId: 'user-1' }, later(60))
  await store.upsertOAuthModel('Session', 'session-2', { uid: 'uid-2' }, later(60))
  await store.upsertOAuthModel('Interaction', 'interaction-1', { uid: 'uid-3', userCode: 'IJKL-MNOP' }, later(60))

  t.same(await store.findOAuthModelByUserCode('DeviceCode', 'ABCD-EFGH', now), { id: 'dc-1', payload: { userCode: 'ABCD-EFGH', grantId: 'grant-1' }, expiresAt: later(60), consumedAt: null })
  t.equal((await store.findOAuthModelByUserCode('DeviceCode', 'WXYZ-1234', now))?.id, 'dc-2')
  t.equal(await store.findOAuthModelByUserCode('DeviceCode', 'NONE-NONE', now), undefined)
  t.equal(await store.findOAuthModelByUserCode('DeviceCode', 'IJKL-MNOP', now), undefined, 'another kind\'s user code')
  t.equal(await store.findOAuthModelByUserCode('DeviceCode', 'ABCD-EFGH', later(60)), undefined, 'expired')

  t.same(await store.findOAuthModelByUid('Session', 'uid-1', now), { id: 'session-1', payload: { uid: 'uid-1', accountId: 'user-1' }, expiresAt: later(60), consumedAt: null })
  t.equal((await store.findOAuthModelByUid('Session', 'uid-2', now))?.id, 'session-2')
  t.equal(await store.findOAuthModelByUid('Session', 'uid-9', now), undefined)
  t.equal(await store.findOAuthModelByUid('Session', 'uid-3', now), undefined, 'another kind\'s uid')
  t.equal(await store.findOAuthModelByUid('Session', 'uid-1', later(61)), undefined, 'expired')

  await store.upsertOAuthModel('Session', 'session-3', { uid: 42, grantId: true }, later(60))
  t.equal(await store.findOAuthModelByUid('Session', '42', now), undefined, 'only a string is a lookup value')
  await store.destroyOAuthModelsOfGrant('true')
  t.ok(await store.findOAuthModel('Session', 'session-3', now), 'a grantId that is no string is none')
})

t.test('listing gives a kind\'s unexpired models oldest first (by insertion), all or one account\'s', async (t) => {
  const store = await testStore(t)
  // Inserted in an order that is neither the ids' nor the expiries'.
  await store.upsertOAuthModel('Grant', 'g-c', { accountId: 'user-1' }, later(300))
  await store.upsertOAuthModel('Grant', 'g-a', { accountId: 'user-2' }, later(100))
  await store.upsertOAuthModel('Grant', 'g-d', { accountId: 'user-1' }, null)
  await store.upsertOAuthModel('Grant', 'g-b', { accountId: 'user-1' }, later(200))
  await store.upsertOAuthModel('Grant', 'g-old', { accountId: 'user-1' }, later(10))
  await store.upsertOAuthModel('Session', 's-1', { accountId: 'user-1' }, later(300))
  // A replaced model keeps its place.
  await store.upsertOAuthModel('Grant', 'g-c', { accountId: 'user-1', replaced: true }, later(400))

  const ids = (records: Array<{ id: string }>) => records.map(record => record.id)
  t.same(ids(await store.listOAuthModels('Grant', later(20))), ['g-c', 'g-a', 'g-d', 'g-b'], 'unexpired, in insertion order')
  t.same(ids(await store.listOAuthModels('Grant', now)), ['g-c', 'g-a', 'g-d', 'g-b', 'g-old'])
  t.same(await store.listOAuthModels('Grant', later(20), { accountId: 'user-1' }), [
    { id: 'g-c', payload: { accountId: 'user-1', replaced: true }, expiresAt: later(400), consumedAt: null },
    { id: 'g-d', payload: { accountId: 'user-1' }, expiresAt: null, consumedAt: null },
    { id: 'g-b', payload: { accountId: 'user-1' }, expiresAt: later(200), consumedAt: null }
  ], 'one account\'s')
  t.same(ids(await store.listOAuthModels('Grant', later(20), { accountId: 'user-3' })), [])
  t.same(ids(await store.listOAuthModels('Session', now, { accountId: 'user-1' })), ['s-1'], 'of the kind asked only')
  t.same(ids(await store.listOAuthModels('Grant', later(250))), ['g-c', 'g-d'])
})

t.test('pruning deletes expired models only, at most the limit at a time, and says how many', async (t) => {
  const store = await testStore(t)
  for (let i = 0; i < 5; i++) await store.upsertOAuthModel('AccessToken', `expired-${i}`, {}, later(-60 + i))
  await store.upsertOAuthModel('AccessToken', 'at-now', {}, now)
  await store.upsertOAuthModel('AccessToken', 'live', {}, later(1))
  await store.upsertOAuthModel('Client', 'app', {}, null)

  t.equal(await store.pruneOAuthModels(now, 4), 4, 'a full batch')
  t.equal(await store.pruneOAuthModels(now, 4), 2, 'the rest (one expires at now)')
  t.equal(await store.pruneOAuthModels(now, 4), 0, 'nothing left to prune')
  for (let i = 0; i < 5; i++) t.equal(await store.findOAuthModel('AccessToken', `expired-${i}`, later(-100)), undefined, `expired-${i} is gone`)
  t.equal(await store.findOAuthModel('AccessToken', 'at-now', later(-100)), undefined, 'at-now is gone')
  t.ok(await store.findOAuthModel('AccessToken', 'live', now), 'an unexpired model stays')
  t.ok(await store.findOAuthModel('Client', 'app', now), 'a model without expiry stays')
  t.equal(await store.pruneOAuthModels(later(10 * 365 * 86_400), 100), 1, 'even far in the future, only the one with an expiry')
  t.ok(await store.findOAuthModel('Client', 'app', later(10 * 365 * 86_400)))
})

t.test('claimOAuthModel writes only where no unexpired model of that kind and id is', async (t) => {
  const store = await testStore(t)
  t.equal(await store.claimOAuthModel('ClientTokenStatus', '7', { jti: 'a' }, later(60), now), true, 'a free id is claimed')
  t.equal(await store.claimOAuthModel('ClientTokenStatus', '7', { jti: 'b' }, later(120), now), false, 'a live one is not taken over')
  t.match((await store.findOAuthModel('ClientTokenStatus', '7', now))?.payload, { jti: 'a' })
  t.equal(await store.claimOAuthModel('Other', '7', { jti: 'c' }, later(60), now), true, 'kinds keep their ids apart')
  await store.upsertOAuthModel('Client', '7', { client_id: '7' }, null)
  t.equal(await store.claimOAuthModel('Client', '7', { jti: 'd' }, later(60), now), false, 'one that never expires is never taken over')
  t.equal(await store.claimOAuthModel('ClientTokenStatus', '7', { jti: 'e' }, later(240), later(61)), true, 'an expired one is replaced')
  const replaced = await store.findOAuthModel('ClientTokenStatus', '7', later(61))
  t.match(replaced, { payload: { jti: 'e' }, expiresAt: later(240), consumedAt: null })
})

t.test('claimOAuthModels claims each id as claimOAuthModel does, in one transaction', async (t) => {
  const store = await testStore(t)
  await store.claimOAuthModel('ClientTokenStatus', '2', { jti: 'held' }, later(60), now)
  await store.claimOAuthModel('ClientTokenStatus', '3', { jti: 'expired' }, later(10), now)
  const claimed = await store.claimOAuthModels('ClientTokenStatus', [
    { id: '1', payload: { jti: 'a' }, expiresAt: later(60) },
    { id: '2', payload: { jti: 'b' }, expiresAt: later(60) },
    { id: '3', payload: { jti: 'c' }, expiresAt: later(90) },
    { id: '1', payload: { jti: 'd' }, expiresAt: later(60) }
  ], later(20))
  t.same(claimed, [true, false, true, false], 'a free id and an expired one are claimed; a live one, or one named before in the batch, is not')
  t.match((await store.findOAuthModel('ClientTokenStatus', '1', later(20)))?.payload, { jti: 'a' })
  t.match((await store.findOAuthModel('ClientTokenStatus', '2', later(20)))?.payload, { jti: 'held' })
  t.match(await store.findOAuthModel('ClientTokenStatus', '3', later(20)), { payload: { jti: 'c' }, expiresAt: later(90), consumedAt: null })
  t.same(await store.claimOAuthModels('ClientTokenStatus', [], now), [], 'an empty batch claims nothing')
})
