import type { FastifyInstance } from 'fastify'
import t from 'tap'
import type { Variant } from '../../core/config.js'
import { sharedChromium, skipWithoutChromium, watchedPage } from '../fixtures/browser.js'
import { loggedInUser, registerUser } from '../fixtures/factories.js'
import { codeAt, enableTotp } from '../fixtures/mfa.js'
import { providerService } from '../fixtures/oauth.js'

/** One browser for the file's tests (each has its own context). */
const chromium = () => sharedChromium(t)

const services = new Map<Variant, Promise<{ server: FastifyInstance, baseUrl: string }>>()

/**
 * One service of each variant for the whole file (built on first use, closed in the file's teardown), with
 * ADMIN_REQUIRE_MFA on: each case needs only fresh users and its own browser context. The non-admin's refusal
 * comes before the second-factor rule (core/admin/admin.ts, authorize), so that case runs on it too.
 */
function sharedService (variant: Variant) {
  let service = services.get(variant)
  if (service === undefined) {
    service = providerService(t, { variant, env: { ADMIN_REQUIRE_MFA: 'true' } })
    services.set(variant, service)
  }
  return service
}

// The admin console (/admin) in Chromium, under the pages' CSP: an admin signs in with the second
// factor, finds a user, disables it (confirmed), and the audit trail shows the action.

for (const variant of ['cookie', 'header'] as const) {
  t.test(`in Chromium, an admin signs in with TOTP, finds a user, disables and enables it, and sees it in the audit trail (${variant} variant)`, { skip: skipWithoutChromium }, async (t) => {
    const { server, baseUrl } = await sharedService(variant)
    const adminSession = await loggedInUser(server, variant, { first_name: 'Root' })
    const { secret } = await enableTotp(server, variant, adminSession)
    await server.store.setUserRole(adminSession.user.id, 'admin', new Date())
    const target = await registerUser(server, variant, { first_name: 'Mallory', last_name: 'Target' })

    const browser = await chromium()
    const { page, violations } = await watchedPage(browser, t, { viewport: { width: 320, height: 800 } })
    await page.goto(`${baseUrl}/admin`)
    await page.getByLabel('Email', { exact: true }).fill(adminSession.user.email)
    await page.getByLabel('Password', { exact: true }).fill(adminSession.user.password)
    await page.getByRole('button', { name: 'Sign in' }).click()
    await page.getByLabel(/code/i).fill(codeAt(secret, 1))
    await page.getByRole('button', { name: /verify/i }).click()

    await page.getByLabel('Search users').fill('mallory')
    await page.getByRole('button', { name: 'Search', exact: true }).click()
    await page.getByRole('button', { name: `Open ${target.email}` }).click()
    await page.locator('#user-title', { hasText: target.email }).waitFor()

    await page.getByRole('button', { name: 'Disable' }).click()
    await page.getByRole('button', { name: 'Yes, do it' }).click()
    await page.getByRole('button', { name: 'Enable' }).waitFor()
    const login = await server.inject({ method: 'POST', url: '/auth/login', payload: { email: target.email, password: target.password } })
    t.equal(login.json().code, 'ACCOUNT_DISABLED', 'the disabled user cannot log in')
    await page.locator('#events li', { hasText: /disabled/ }).first().waitFor()
    t.match(await page.locator('#events').innerText(), new RegExp(`by admin ${adminSession.user.id}`), 'the audit trail names the admin')

    await page.getByRole('button', { name: 'Enable' }).click()
    await page.getByRole('button', { name: 'Yes, do it' }).click()
    await page.getByRole('button', { name: 'Disable' }).waitFor()
    t.same(await violations(), [], 'nothing refused under the CSP')
  })
}

for (const variant of ['cookie', 'header'] as const) {
  t.test(`in Chromium, an admin finds an organisation and opens it with its members (${variant} variant)`, { skip: skipWithoutChromium }, async (t) => {
    const { server, baseUrl } = await sharedService(variant)
    const adminSession = await loggedInUser(server, variant, { first_name: 'Root' })
    const { secret } = await enableTotp(server, variant, adminSession)
    await server.store.setUserRole(adminSession.user.id, 'admin', new Date())
    const owner = await registerUser(server, variant, { first_name: 'Olga', last_name: 'Owner' })
    const name = `Umbrella ${variant}`
    const org = await server.store.createOrganisation({ name, slug: `umbrella-${variant}`, ownerId: owner.id }, new Date())

    const browser = await chromium()
    const { page, violations } = await watchedPage(browser, t, { viewport: { width: 320, height: 800 } })
    await page.goto(`${baseUrl}/admin`)
    await page.getByLabel('Email', { exact: true }).fill(adminSession.user.email)
    await page.getByLabel('Password', { exact: true }).fill(adminSession.user.password)
    await page.getByRole('button', { name: 'Sign in' }).click()
    await page.getByLabel(/code/i).fill(codeAt(secret, 1))
    await page.getByRole('button', { name: /verify/i }).click()

    await page.getByLabel('Search organisations').fill(`UMBRELLA-${variant}`)
    await page.getByRole('button', { name: 'Search organisations' }).click()
    t.equal(await page.locator('#orgs li').count(), 1, 'the one organisation whose slug matches')
    await page.getByRole('button', { name: `Open ${name}` }).click()
    await page.locator('#org-title', { hasText: name }).waitFor()
    t.match(await page.locator('#org-fields').innerText(), new RegExp(`umbrella-${variant}`))
    t.match(await page.locator('#org-members').innerText(), new RegExp(`${owner.email.replace(/[.+]/g, '\\$&')} · owner`), 'its owner, with the role')
    await page.getByRole('button', { name: `Open user ${owner.email}` }).click()
    await page.locator('#user-title', { hasText: owner.email }).waitFor()
    t.ok(org.id > 0)
    t.same(await violations(), [], 'nothing refused under the CSP')
  })
}

t.test('in Chromium, a signed-in user who is not an admin is told so', { skip: skipWithoutChromium }, async (t) => {
  const { server, baseUrl } = await sharedService('cookie')
  const user = await registerUser(server, 'cookie')
  const browser = await chromium()
  const { page } = await watchedPage(browser, t)
  await page.goto(`${baseUrl}/admin`)
  await page.getByLabel('Email', { exact: true }).fill(user.email)
  await page.getByLabel('Password', { exact: true }).fill(user.password)
  await page.getByRole('button', { name: 'Sign in' }).click()
  await page.getByText('This account is not an administrator.').first().waitFor()
  t.pass('refused with a clear message')
})
