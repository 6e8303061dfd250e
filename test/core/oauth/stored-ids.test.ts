import t, { type Test } from 'tap'
import { createAdapterClass } from '../../../core/oauth/adapter.js'
import { createGrantSessions } from '../../../core/oauth/grant-sessions.js'
import { createRevocations } from '../../../core/revocations/revocations.js'
import { silentLogger } from '../../../core/logger.js'
import { hashToken } from '../../../core/tokens/random-token.js'
import { testClock } from '../../fixtures/clock.js'
import { testStore } from '../../fixtures/database.js'

// What the adapter stores of a model whose id is a secret (core/oauth/stored-ids.ts), and how it gives it back.

async function setUp (t: Test) {
  const opened = await testStore(t)
  const clock = testClock()
  const { store, revocations, close } = await createRevocations({ store: opened, clock, log: silentLogger }, { accessTokenTtlSeconds: 900 })
  t.teardown(close)
  let interaction: Record<string, unknown> | undefined
  const Adapter = createAdapterClass({ store, grantSessions: createGrantSessions({ store, revocations, clock }), clock, requestInteraction: () => interaction })
  return { store, Adapter, now: () => new Date(clock.now()), resume: (value: Record<string, unknown> | undefined) => { interaction = value } }
}

t.test('a secret id is stored as its hash, its payload without it; found by the id, the payload names it again', async (t) => {
  const { store, Adapter, now } = await setUp(t)
  const sessions = new Adapter('Session')
  await sessions.upsert('cookie-value', { jti: 'cookie-value', uid: 'uid-1', accountId: '1' }, 60)
  const [row] = await store.listOAuthModels('Session', now())
  t.same(row.id, hashToken('cookie-value'))
  t.same(row.payload, { uid: 'uid-1', accountId: '1' }, 'no id in the stored payload')
  t.same(await sessions.find('cookie-value'), { uid: 'uid-1', accountId: '1', jti: 'cookie-value' })
  t.equal(await sessions.find(row.id), undefined, 'the stored id finds nothing')

  const byUid = await sessions.findByUid('uid-1')
  t.equal(byUid?.jti, `stored:${row.id}`, 'found by its uid, it carries a reference to its row')
  t.equal(await sessions.find(String(byUid?.jti)), undefined, 'which finds nothing')
  await sessions.upsert(String(byUid?.jti), { ...byUid, accountId: '2' }, 60)
  t.same((await sessions.find('cookie-value'))?.accountId, '2', 'but saves the same row')
  await sessions.destroy(String(byUid?.jti))
  t.equal(await sessions.find('cookie-value'), undefined, 'and destroys it')
})

t.test('a device code found by its user code, named by an interaction, is found by reference for that interaction only', async (t) => {
  const { store, Adapter, now, resume } = await setUp(t)
  const deviceCodes = new Adapter('DeviceCode')
  const interactions = new Adapter('Interaction')
  await deviceCodes.upsert('device-code', { jti: 'device-code', userCode: 'BCDFGHJK', clientId: 'tv' }, 600)
  const [row] = await store.listOAuthModels('DeviceCode', now())
  t.not(row.payload.userCode, 'BCDFGHJK', 'the user code is stored hashed')
  const found = await deviceCodes.findByUserCode('BCDFGHJK')
  t.equal(found?.userCode, 'BCDFGHJK', 'found by it, the payload names it as given')
  const reference = String(found?.jti)

  await interactions.upsert('interaction-uid', { jti: 'interaction-uid', deviceCode: reference, parJti: 'pushed-request', session: { uid: 'uid-1', cookie: 'cookie-value' } }, 60)
  const [stored] = await store.listOAuthModels('Interaction', now())
  t.same(stored.payload, { deviceCode: reference, parJti: `stored:${hashToken('pushed-request')}`, session: { uid: 'uid-1' } },
    'the interaction holds references and no session cookie')
  const interaction = await interactions.find('interaction-uid')
  t.equal(await deviceCodes.find(reference), undefined, 'no interaction resumed: the reference finds nothing')
  resume(interaction)
  t.equal((await deviceCodes.find(reference))?.clientId, 'tv', 'resuming the interaction that names it, it is found')
  resume({ deviceCode: 'stored:another' })
  t.equal(await deviceCodes.find(reference), undefined, 'not for another interaction')
  t.equal((await deviceCodes.find('device-code'))?.clientId, 'tv', 'the device code itself is found anywhere')
})
