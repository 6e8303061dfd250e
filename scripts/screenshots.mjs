// Screenshots of the pages for docs/pages.md, into docs/: `npm run screenshots` (builds first).
// Runs the built service in this process on a throw-away store and drives Debian's Chromium
// (CHROMIUM=/path/to/chromium to use another) with playwright-core.
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import Fastify from 'fastify'
import fp from 'fastify-plugin'
import { chromium } from 'playwright-core'
import app, { serverOptions } from '../dist/src/app.js'
import { loadConfig } from '../dist/core/config.js'

const root = fileURLToPath(new URL('..', import.meta.url))
const docs = join(root, 'docs')
const folder = mkdtempSync(join(tmpdir(), 'account-screenshots-'))
const config = loadConfig({
  NODE_ENV: 'test',
  LOG_LEVEL: 'silent',
  DATABASE_URL: join(folder, 'accounts.db'),
  COOKIE_SECURE: 'false',
  RATE_LIMIT_ENABLED: 'false',
  PASSWORD_HASH_TARGET: '0ms'
})
const server = Fastify(serverOptions(config))
await server.register(fp(app), { config })
const baseUrl = await server.listen({ host: '127.0.0.1', port: 0 })
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium',
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync']
})

try {
  mkdirSync(docs, { recursive: true })
  const post = (path, body, headers = {}) => fetch(`${baseUrl}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) })
  const ada = { first_name: 'Ada', last_name: 'Lovelace', username: 'ada', email: 'ada@example.com', password: 'analytical engine 1843' }
  await post('/auth/register', ada)
  // A second device, so the sessions list shows one that is not this one.
  await post('/auth/login', { email: ada.email, password: ada.password }, { 'user-agent': 'Mozilla/5.0 (iPhone; CPU iPhone OS 18_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.0 Mobile/15E148 Safari/604.1' })

  const page = await (await browser.newContext({ viewport: { width: 480, height: 640 }, deviceScaleFactor: 1 })).newPage()
  const shoot = async (name, fullPage = false) => {
    await page.screenshot({ path: join(docs, `${name}.png`), fullPage })
    console.log(`docs/${name}.png`)
  }
  // Any well-formed token shows the page as a mail link opens it; a password too short is refused
  // by the request's schema, before the token is looked at.
  await page.goto(`${baseUrl}/reset-password#token=${'x'.repeat(43)}`)
  await page.locator('#reset-form').waitFor()
  await page.fill('#new-password', 'short')
  await page.fill('#repeat-password', 'short')
  await page.click('#reset-form button')
  await page.locator('#reset-message').filter({ hasText: 'Too short' }).waitFor()
  await shoot('reset-password')

  await page.goto(`${baseUrl}/verify-email#token=${'x'.repeat(43)}`)
  await page.locator('#verify').waitFor()
  await shoot('verify-email')

  await page.goto(`${baseUrl}/account`)
  await page.locator('#login-form').waitFor()
  await shoot('account-signed-out')
  await page.fill('#login-email', ada.email)
  await page.fill('#login-password', ada.password)
  await page.click('#login-form button[type=submit]')
  await page.locator('#sessions > li').nth(1).waitFor()
  await shoot('account', true)
  // The authenticator app being turned on: the QR code drawn in the page and the key as text.
  await page.click('#totp-on')
  await page.locator('#totp-qr svg').waitFor()
  await page.locator('section', { has: page.locator('#two-step-title') }).screenshot({ path: join(docs, 'account-totp.png') })
  console.log('docs/account-totp.png')

  // The admin console, Ada made an admin (as `account-service users set-role` does), Grace's page open.
  await post('/auth/register', { first_name: 'Grace', last_name: 'Hopper', username: 'grace', email: 'grace@example.com', password: 'compiler cobol 1959' })
  await server.store.setUserRole(1, 'admin', new Date())
  await page.goto(`${baseUrl}/admin`)
  await page.locator('#users > li').nth(1).waitFor()
  await page.getByRole('button', { name: 'Open grace@example.com' }).click()
  await page.locator('#events > li').first().waitFor()
  await shoot('admin', true)
} finally {
  await browser.close()
  await server.close()
  rmSync(folder, { recursive: true, force: true })
}
