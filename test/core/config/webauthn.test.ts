import t from 'tap'
import { loadConfig } from '../../../core/config.js'

t.test('the passkey relying party follows PUBLIC_URL by default', async (t) => {
  t.same(loadConfig({}).webauthn, { rpId: 'localhost', rpName: 'account-service', origins: ['http://localhost:3000'] })
  t.same(loadConfig({ PUBLIC_URL: 'https://accounts.example.com/base/' }).webauthn, {
    rpId: 'accounts.example.com', rpName: 'account-service', origins: ['https://accounts.example.com']
  })
})

t.test('WEBAUTHN_RP_ID, WEBAUTHN_RP_NAME and WEBAUTHN_ORIGINS set it; origins may be subdomains of the RP ID', async (t) => {
  const config = loadConfig({
    PUBLIC_URL: 'https://accounts.example.com',
    WEBAUTHN_RP_ID: 'Example.com',
    WEBAUTHN_RP_NAME: 'Example',
    WEBAUTHN_ORIGINS: 'https://example.com, https://app.example.com'
  })
  t.same(config.webauthn, { rpId: 'example.com', rpName: 'Example', origins: ['https://example.com', 'https://app.example.com'] })
})

t.test('a relying party no browser would accept stops the start with one line naming the setting', async (t) => {
  t.throws(() => loadConfig({ WEBAUTHN_RP_ID: 'https://example.com' }), /^Invalid setting: WEBAUTHN_RP_ID /)
  t.throws(() => loadConfig({ WEBAUTHN_RP_ID: 'example.com' }), /^Invalid setting: WEBAUTHN_ORIGINS has "http:\/\/localhost:3000", which is not on WEBAUTHN_RP_ID/)
  t.throws(() => loadConfig({ WEBAUTHN_RP_ID: 'example.com', WEBAUTHN_ORIGINS: 'https://notexample.com' }), /^Invalid setting: WEBAUTHN_ORIGINS /)
  t.throws(() => loadConfig({ WEBAUTHN_ORIGINS: 'localhost:3000' }), /^Invalid setting: WEBAUTHN_ORIGINS has "localhost:3000", which is not an origin/)
  t.throws(() => loadConfig({ WEBAUTHN_ORIGINS: ' , ' }), /^Invalid setting: WEBAUTHN_ORIGINS is empty/)
  t.throws(() => loadConfig({ WEBAUTHN_RP_NAME: '' }), /^Invalid setting: WEBAUTHN_RP_NAME /)
})
