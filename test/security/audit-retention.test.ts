import type { FastifyInstance } from 'fastify'
import t, { type Test } from 'tap'
import { loadConfig } from '../../core/config.js'
import { adminRequest, adminSession } from '../fixtures/admin.js'
import { build, TEST_ENVIRONMENT } from '../fixtures/build.js'
import { testClock } from '../fixtures/clock.js'
import { eventually } from '../fixtures/eventually.js'
import { loggedInUser, logIn, type Session } from '../fixtures/factories.js'

/*
 * Issue 33, finding 16: the audit trail (an admin's actions) was pruned with the security events, after
 * SECURITY_EVENT_RETENTION. It is kept for AUDIT_RETENTION (default 365 days) instead; a user's own
 * events of the same age still go.
 */

const VARIANT = 'header'
const DAY_MS = 86_400_000

/** The target's events as the audit trail shows them to an admin signed in now. */
async function auditTrail (t: Test, server: FastifyInstance, admin: Session, userId: number): Promise<string[]> {
  const fresh = await logIn(server, VARIANT, admin.user)
  const response = await adminRequest(server, VARIANT, fresh, 'GET', `/admin/events?user=${userId}`)
  t.equal(response.statusCode, 200, response.body)
  return (response.json().events as Array<{ type: string }>).map(event => event.type)
}

t.test('an admin action older than SECURITY_EVENT_RETENTION survives pruning until AUDIT_RETENTION; the user\'s own event goes', async (t) => {
  const clock = testClock()
  const server = await build(t, { variant: VARIANT, clock, env: { SECURITY_EVENT_RETENTION: '30d', REFRESH_TOKEN_PRUNE_INTERVAL: '1s' } })
  const admin = await adminSession(server, VARIANT)
  const target = await loggedInUser(server, VARIANT)
  const disabled = await adminRequest(server, VARIANT, admin, 'POST', `/admin/users/${target.user.id}/disable`)
  t.equal(disabled.statusCode, 204, disabled.body)
  t.same((await auditTrail(t, server, admin, target.user.id)).sort(), ['account_disabled', 'login'])

  // 60 days on: past SECURITY_EVENT_RETENTION, well within the audit's year.
  clock.advance(60 * DAY_MS)
  t.ok(await eventually(async () => !(await auditTrail(t, server, admin, target.user.id)).includes('login'), 5000), 'the login event was pruned')
  t.same(await auditTrail(t, server, admin, target.user.id), ['account_disabled'], 'the admin\'s action is still in the audit trail')

  // Past AUDIT_RETENTION (365 days by default): the admin action goes too.
  clock.advance(310 * DAY_MS)
  t.ok(await eventually(async () => (await auditTrail(t, server, admin, target.user.id)).length === 0, 5000), 'pruned after AUDIT_RETENTION')
})

t.test('AUDIT_RETENTION is a duration, 365 days by default, and at least SECURITY_EVENT_RETENTION', async (t) => {
  t.equal(loadConfig({ ...TEST_ENVIRONMENT }).auditRetentionSeconds, 365 * 86_400)
  t.equal(loadConfig({ ...TEST_ENVIRONMENT, AUDIT_RETENTION: '730d' }).auditRetentionSeconds, 730 * 86_400)
  t.throws(() => loadConfig({ ...TEST_ENVIRONMENT, AUDIT_RETENTION: 'a year' }), /AUDIT_RETENTION/)
  t.throws(() => loadConfig({ ...TEST_ENVIRONMENT, SECURITY_EVENT_RETENTION: '400d' }), /AUDIT_RETENTION must be at least SECURITY_EVENT_RETENTION/)
})
