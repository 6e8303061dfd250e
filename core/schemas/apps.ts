import { Type, type Static } from '@sinclair/typebox'
import { NO_NUL } from './common.js'

/**
 * An app a user has let in: its grants to one client, taken together, as the provider's account side
 * (core/oauth/apps.ts) lists them; defined here, below the rules, with the view that shows it.
 */
export interface AppAccess {
  clientId: string
  name: string
  scopes: string[]
  grantedAt: Date
  /** When the app last got a token (written at most once a minute per grant). */
  lastUsedAt: Date
}

/** An app the user let in through the OAuth / OpenID provider. */
export const AppView = Type.Object({
  client_id: Type.String(),
  name: Type.String(),
  scopes: Type.Array(Type.String()),
  granted_at: Type.String({ format: 'date-time' }),
  last_used_at: Type.String({ format: 'date-time', description: 'When the app last got a token (recorded at most once a minute)' })
})

export const AppsResponse = Type.Object({ apps: Type.Array(AppView) })

export const AppParams = Type.Object({ clientId: Type.String({ minLength: 1, maxLength: 128, pattern: NO_NUL }) }, { additionalProperties: false })

export function presentApp (app: AppAccess): Static<typeof AppView> {
  return { client_id: app.clientId, name: app.name, scopes: app.scopes, granted_at: app.grantedAt.toISOString(), last_used_at: app.lastUsedAt.toISOString() }
}
