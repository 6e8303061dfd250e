import fp from 'fastify-plugin'
import { createApps, type Apps } from '../../core/oauth/apps.js'
import { createClientTokenStatus } from '../../core/oauth/client-token-status.js'
import { loadCookieKeys } from '../../core/oauth/cookie-keys.js'
import { createGrantSessions, type GrantSessions } from '../../core/oauth/grant-sessions.js'
import { createOAuthProvider, type OAuthProvider, type OAuthProviderOptions } from '../../core/oauth/provider.js'

declare module 'fastify' {
  interface FastifyInstance {
    oauth: OAuthProvider
    grantSessions: GrantSessions
    apps: Apps
  }
}

/** The OAuth 2.1 / OpenID provider for other apps (core/oauth/provider.ts); its routes are routes/oauth/. */
export default fp<OAuthProviderOptions>(async (fastify, options) => {
  const { store, revocations, accessTokens, statusList, clock, log } = fastify
  const grantSessions = createGrantSessions({ store, revocations, clock })
  fastify.decorate('grantSessions', grantSessions)
  const clientTokens = createClientTokenStatus({ store, clock })
  const oauth = createOAuthProvider({ store, accessTokens, statusLists: statusList, grantSessions, clientTokens, clock, log, cookieKeys: () => loadCookieKeys(store) }, options)
  fastify.decorate('oauth', oauth)
  fastify.decorate('apps', createApps({ store, grantSessions, revokeGrant: oauth.revokeGrant, securityEvents: fastify.securityEvents, clock }))
}, { name: 'oauth', dependencies: ['store', 'tokens', 'status-list', 'clock', 'security-events'] })
