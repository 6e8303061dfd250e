import t from 'tap'
import { build } from '../fixtures/build.js'
import { cookieValue, credentials, loggedInUser } from '../fixtures/factories.js'
import { hashToken } from '../../core/tokens/random-token.js'

const variant = 'cookie'

t.test('the store prunes expired and revoked refresh tokens and keeps live and rotated ones', async (t) => {
  const server = await build(t, { variant, env: { REFRESH_TOKEN_PRUNE_INTERVAL: '0' } })
  const { store } = server
  const loggedOut = await loggedInUser(server, variant)
  await server.inject({ method: 'POST', url: '/auth/logout', ...credentials(variant, loggedOut) })
  const rotating = await loggedInUser(server, variant)
  const successor = cookieValue(await server.inject({ method: 'POST', url: '/auth/refresh-token', cookies: { refreshToken: rotating.refreshToken } }), 'refreshToken')

  t.equal(await store.pruneRefreshTokens(new Date(), 100), 1, 'the revoked one')
  t.equal(await store.findRefreshToken(hashToken(loggedOut.refreshToken)), undefined)
  t.ok(await store.findRefreshToken(hashToken(rotating.refreshToken)), 'the rotated one stays: reuse detection needs it')
  t.ok(await store.findRefreshToken(hashToken(successor)))

  const afterExpiry = new Date(Date.now() + 31 * 86400_000)
  t.equal(await store.pruneRefreshTokens(afterExpiry, 1), 1, 'at most the limit per call')
  t.equal(await store.pruneRefreshTokens(afterExpiry, 100), 1)
  t.equal(await store.pruneRefreshTokens(afterExpiry, 100), 0)
})

t.test('pruning runs in the background on REFRESH_TOKEN_PRUNE_INTERVAL, and a replayed pruned token is still refused', async (t) => {
  const server = await build(t, { variant, env: { REFRESH_TOKEN_PRUNE_INTERVAL: '1s' } })
  const tokens = []
  for (let index = 0; index < 3; index++) {
    const session = await loggedInUser(server, variant)
    await server.inject({ method: 'POST', url: '/auth/logout', ...credentials(variant, session) })
    tokens.push(session.refreshToken)
  }
  const live = await loggedInUser(server, variant)
  await new Promise(resolve => setTimeout(resolve, 1500))
  for (const token of tokens) t.equal(await server.store.findRefreshToken(hashToken(token)), undefined, 'pruned')
  t.ok(await server.store.findRefreshToken(hashToken(live.refreshToken)), 'the live one stays')
  const replay = await server.inject({ method: 'POST', url: '/auth/refresh-token', cookies: { refreshToken: tokens[0] } })
  t.equal(replay.statusCode, 401)
})

t.test('mail sent or given up over a week ago is pruned in the background; recent and pending mail stays', async (t) => {
  const server = await build(t, { variant, env: { REFRESH_TOKEN_PRUNE_INTERVAL: '1s' } })
  const { store } = server
  await server.mailer.idle() // the worker's first round, at start, is over: it looks again only in 5 s
  const now = new Date()
  for (const subject of ['sent long ago', 'given up long ago', 'sent just now', 'pending']) {
    await store.enqueueMail({ to: 'ada@example.com', subject, text: 'a link' }, now)
  }
  // Claimed here, with a lease far ahead, so the service's own worker leaves them to this test.
  const [old, failed, recent] = await store.claimMails(now, new Date(now.getTime() + 3_600_000), 4)
  const eightDaysAgo = new Date(now.getTime() - 8 * 86400_000)
  await store.markMailSent(old.id, eightDaysAgo)
  await store.markMailFailed(failed.id, eightDaysAgo, 'refused')
  await store.markMailSent(recent.id, now)
  await new Promise(resolve => setTimeout(resolve, 1500))
  t.equal(await store.pruneMails(new Date(now.getTime() - 86400_000), 100), 0, 'the week-old ones are gone already')
  t.equal(await store.pruneMails(new Date(now.getTime() + 1000), 100), 1, 'the one sent just now was kept')
  t.equal(await store.countPendingMails(), 1, 'a pending mail is never pruned')
})

t.test('the OAuth provider\'s expired models are pruned in the background; unexpired ones and clients stay', async (t) => {
  const server = await build(t, { variant, env: { REFRESH_TOKEN_PRUNE_INTERVAL: '1s' } })
  const { store } = server
  const now = new Date()
  await store.upsertOAuthModel('AuthorizationCode', 'expired', { grantId: 'grant-1' }, new Date(now.getTime() - 1000))
  await store.upsertOAuthModel('AuthorizationCode', 'live', { grantId: 'grant-1' }, new Date(now.getTime() + 3_600_000))
  await store.upsertOAuthModel('Client', 'app', { client_id: 'app' }, null)
  await new Promise(resolve => setTimeout(resolve, 1500))
  t.equal(await store.pruneOAuthModels(now, 100), 0, 'the expired one is gone already')
  t.ok(await store.findOAuthModel('AuthorizationCode', 'live', now))
  t.ok(await store.findOAuthModel('Client', 'app', now))
})

t.test('webhook events delivered or given up over a week ago are pruned in the background; recent and pending ones stay', async (t) => {
  // No WEBHOOK_URL: the service's own worker leaves the rows to this test.
  const server = await build(t, { variant, env: { REFRESH_TOKEN_PRUNE_INTERVAL: '1s' } })
  const { store } = server
  const now = new Date()
  await store.enqueueWebhooks(['delivered long ago', 'given up long ago', 'delivered just now', 'pending'].map((type, n) => ({ messageId: `msg_${n}`, type, payload: '{}' })), now)
  const [old, failed, recent] = await store.claimWebhooks(now, new Date(now.getTime() + 3_600_000), 3)
  const eightDaysAgo = new Date(now.getTime() - 8 * 86400_000)
  await store.markWebhookDelivered(old.id, eightDaysAgo)
  await store.markWebhookFailed(failed.id, eightDaysAgo, 'HTTP 500')
  await store.markWebhookDelivered(recent.id, now)
  await new Promise(resolve => setTimeout(resolve, 1500))
  t.equal(await store.pruneWebhooks(new Date(now.getTime() - 86400_000), 100), 0, 'the week-old ones are gone already')
  t.equal(await store.pruneWebhooks(new Date(now.getTime() + 1000), 100), 1, 'the one delivered just now was kept')
  t.equal(await store.countPendingWebhooks(), 1, 'a pending event is never pruned')
})
