import fp from 'fastify-plugin'
import { currentDate } from '../../core/clock.js'
import { createApps, type Apps } from '../../core/oauth/apps.js'
import { createBackchannelLogout } from '../../core/oauth/backchannel-logout.js'
import { createClientTokenStatus } from '../../core/oauth/client-token-status.js'
import { loadCookieKeys, sealCookieKey } from '../../core/oauth/cookie-keys.js'
import { createGrantSessions, type GrantSessions } from '../../core/oauth/grant-sessions.js'
import { createProviderSessions } from '../../core/oauth/provider-sessions.js'
import { createOAuthProvider, type OAuthProvider, type OAuthProviderOptions } from '../../core/oauth/provider.js'
import { hashStoredIds } from '../../core/oauth/stored-ids-upgrade.js'
import { createSealer } from '../../core/secrets/sealing.js'

declare module 'fastify' {
  interface FastifyInstance {
    oauth: OAuthProvider
    grantSessions: GrantSessions
    apps: Apps
  }
}

export interface OAuthPluginOptions extends OAuthProviderOptions {
  /** SIGNING_KEY_ENCRYPTION_KEY: seals the provider's cookie key in the store. */
  signingKeyEncryptionKey?: Buffer
}

/** The OAuth 2.1 / OpenID provider for other apps (core/oauth/provider.ts); its routes are routes/oauth/. */
export default fp<OAuthPluginOptions>(async (fastify, { signingKeyEncryptionKey, ...options }) => {
  const { store, revocations, accessTokens, statusList, clock, log } = fastify
  const sealer = signingKeyEncryptionKey === undefined ? undefined : createSealer(signingKeyEncryptionKey)
  // At start, as the signing keys: a sealed cookie key that does not open refuses it; one in clear is sealed.
  await sealCookieKey(store, sealer)
  const rewritten = await hashStoredIds(store, currentDate(clock))
  if (rewritten > 0) log.info({ rewritten }, 'the OAuth provider\'s stored models are now keyed by the hashes of their ids')
  const grantSessions = createGrantSessions({ store, revocations, clock })
  fastify.decorate('grantSessions', grantSessions)
  const providerSessions = createProviderSessions({ store, revocations, securityEvents: fastify.securityEvents, clock })
  const clientTokens = createClientTokenStatus({ store, clock })
  // The provider is built on first use; the logout tokens are signed by the one current when a grant ends.
  const backchannelLogout = createBackchannelLogout({ store, provider: async () => await oauth.current(), clock, log })
  revocations.onSessionRevoked((row) => { backchannelLogout.sessionRevoked(row) })
  const oauth = createOAuthProvider({ store, accessTokens, statusLists: statusList, grantSessions, providerSessions, clientTokens, clock, log, cookieKeys: () => loadCookieKeys(store, sealer), backchannelLogout, users: fastify.userCache }, options)
  fastify.decorate('oauth', oauth)
  fastify.decorate('apps', createApps({ store, grantSessions, revokeGrant: oauth.revokeGrant, securityEvents: fastify.securityEvents, clock }))
}, { name: 'oauth', dependencies: ['store', 'tokens', 'status-list', 'clock', 'security-events', 'user-cache'] })
