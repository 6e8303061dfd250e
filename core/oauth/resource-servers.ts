import type { OAuthStore } from '../../db/store.js'
import { currentDate, type Clock } from '../clock.js'

/*
 * The team's APIs that apps may ask tokens for (RFC 8707 resource indicators), registered by the operator
 * (`account-service resources add <uri> --scopes "read write"`): one `oauth_models` row each, of a kind of
 * its own, id the URI, payload its scopes. A token asked for with `resource=<uri>` has `aud` = the URI and
 * carries only that API's scopes (which the consent page shows and the grant keeps); the service's own
 * resource (PUBLIC_URL, with the user scopes) stays the default, and an unknown resource is invalid_target
 * (core/oauth/provider.ts, resourceIndicators).
 */

export const RESOURCE_SERVER_KIND = 'ResourceServer'

/**
 * How long a lookup is served from memory: every authorization and token request with a `resource` reads
 * it. A resource added or removed on another instance (or by the CLI) is seen within this time.
 */
export const RESOURCE_SERVER_CACHE_MS = 5000

export interface ResourceServer {
  /** The resource indicator: the `resource` apps send, the `aud` of its tokens. */
  uri: string
  scopes: string[]
}

/** Why `uri` cannot name a resource (RFC 8707 §2: an absolute URI without a fragment), or undefined. */
export function resourceUriProblem (uri: string): string | undefined {
  if (!URL.canParse(uri) || !/^[a-z][a-z0-9+.-]*:/i.test(uri)) return `not an absolute URI: ${uri}`
  if (uri.includes('#')) return `a resource URI may not have a fragment: ${uri}`
  return undefined
}

/** Why `scope` cannot be one of an API's scopes (RFC 6749 §3.3's scope-token, and none of `reserved`), or undefined. */
export function scopeProblem (scope: string, reserved: readonly string[]): string | undefined {
  if (!/^[\x21\x23-\x5B\x5D-\x7E]+$/.test(scope)) return `not a scope (printable ASCII without spaces, " or \\): ${scope}`
  if (reserved.includes(scope)) return `${scope} is one of the service's own scopes (${reserved.join(', ')})`
  return undefined
}

type Store = Pick<OAuthStore, 'upsertOAuthModel' | 'findOAuthModel' | 'listOAuthModels' | 'destroyOAuthModel'>

const scopesOf = (payload: Record<string, unknown>): string[] =>
  Array.isArray(payload.scopes) ? payload.scopes.filter((scope): scope is string => typeof scope === 'string') : []

/** Registers an API, or replaces the scopes of one registered; true when it was registered before. */
export async function addResourceServer (store: Store, { uri, scopes }: ResourceServer, now: Date): Promise<boolean> {
  const existed = await store.findOAuthModel(RESOURCE_SERVER_KIND, uri, now) !== undefined
  await store.upsertOAuthModel(RESOURCE_SERVER_KIND, uri, { scopes: [...new Set(scopes)] }, null)
  return existed
}

/** The registered APIs, oldest first. */
export async function listResourceServers (store: Store, now: Date): Promise<ResourceServer[]> {
  return (await store.listOAuthModels(RESOURCE_SERVER_KIND, now)).map(row => ({ uri: row.id, scopes: scopesOf(row.payload) }))
}

/** Removes an API: new tokens for it are invalid_target; those issued live out their lifetime. False when it was not registered. */
export async function removeResourceServer (store: Store, uri: string, now: Date): Promise<boolean> {
  if (await store.findOAuthModel(RESOURCE_SERVER_KIND, uri, now) === undefined) return false
  await store.destroyOAuthModel(RESOURCE_SERVER_KIND, uri)
  return true
}

export interface ResourceServers {
  /** The registered API of this resource indicator, or undefined. */
  find (uri: string): Promise<ResourceServer | undefined>
}

export function createResourceServers ({ store, clock }: { store: Pick<OAuthStore, 'findOAuthModel'>, clock: Clock }): ResourceServers {
  const cache = new Map<string, { found: ResourceServer | undefined, readAt: number }>()
  return {
    async find (uri) {
      const cached = cache.get(uri)
      if (cached !== undefined && clock.now() - cached.readAt < RESOURCE_SERVER_CACHE_MS) return cached.found
      const row = await store.findOAuthModel(RESOURCE_SERVER_KIND, uri, currentDate(clock))
      const found = row === undefined ? undefined : { uri, scopes: scopesOf(row.payload) }
      // Apps name few resources; an unknown one is remembered too, and the bound keeps a flood of them small.
      if (cache.size >= 1000) cache.clear()
      cache.set(uri, { found, readAt: clock.now() })
      return found
    }
  }
}
