import t, { type Test } from 'tap'
import { STATUS_INDEX_FIELD } from '../../../core/oauth/adapter.js'
import { createTokenClaims, GrantEndedError } from '../../../core/oauth/token-claims.js'
import { silentLogger } from '../../../core/logger.js'
import { testClock } from '../../fixtures/clock.js'
import { testStore } from '../../fixtures/database.js'

// An app's access token carries its grant's status entry (core/oauth/token-claims.ts): the one way an API learns of
// its revocation. A token of a grant that is gone when it is signed (a code spent twice at once: the request that
// lost ended the grant) is not signed at all.

async function setUp (t: Test) {
  const store = await testStore(t)
  const clock = testClock()
  const tokenClaims = createTokenClaims({
    store,
    statusLists: { claim: (index: number) => ({ status_list: { idx: index, uri: 'https://status.example/1' } }) } as never,
    clientTokens: { issue: async () => 0 } as never,
    grantSessions: { touch: async () => {} },
    clock,
    log: silentLogger,
    accessTokenTtlSeconds: 900
  })
  return { store, clock, tokenClaims }
}

const tokenOf = (grantId: string) => ({ kind: 'AccessToken', grantId, accountId: '1', scope: 'openid', clientId: 'app', jti: 'j' })

t.test('a grant\'s token carries its status entry and grant id', async (t) => {
  const { store, clock, tokenClaims } = await setUp(t)
  await store.upsertOAuthModel('Grant', 'g1', { accountId: '1', clientId: 'app', [STATUS_INDEX_FIELD]: 7 }, new Date(clock.now() + 3600_000))
  t.same(await tokenClaims.extraTokenClaims(tokenOf('g1')), { grant_id: 'g1', status: { status_list: { idx: 7, uri: 'https://status.example/1' } } })
})

t.test('a grant stored without a status index (before status lists) still gets its token, with its grant id', async (t) => {
  const { store, clock, tokenClaims } = await setUp(t)
  await store.upsertOAuthModel('Grant', 'g2', { accountId: '1', clientId: 'app' }, new Date(clock.now() + 3600_000))
  t.same(await tokenClaims.extraTokenClaims(tokenOf('g2')), { grant_id: 'g2' })
})

t.test('a grant that is gone as its token is signed: no token (GrantEndedError), not one without a status entry', async (t) => {
  const { tokenClaims } = await setUp(t)
  const refused = await tokenClaims.extraTokenClaims(tokenOf('gone')).then(() => undefined, (error: unknown) => error)
  t.ok(refused instanceof GrantEndedError, 'refused: core/oauth/provider.ts answers it invalid_grant')
})
