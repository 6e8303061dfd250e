import { hashToken } from '../tokens/random-token.js'

/*
 * What the store holds of oidc-provider's models (issue 33, finding 6): a model whose id is a bearer
 * secret or a cookie value (a refresh token, a code, the _session cookie, an interaction's uid, a
 * registration access token...) is stored under the SHA-256 of its id, as the service's own refresh
 * tokens are, and its payload without the id (oidc-provider puts it there as `jti`). A copy of the
 * store then holds nothing to present: the adapter hashes what a request presents and looks that up.
 * Clients and grants are named by identifiers, not secrets (a grant names its session: oauth.<grant id>).
 */

/** The models stored as they are named. */
const NAMED_BY_IDENTIFIER = new Set(['Client', 'Grant'])

/**
 * A model found by something else than its id (a session by its uid, a device code by its user code)
 * comes with its stored id in this form as its id: the raw one is not in the store. Saving, consuming
 * or destroying it by that id reaches the same row; finding by it is refused (see acceptsReference).
 */
const REFERENCE = 'stored:'

/** The payload fields of an interaction that name another model by its id, and that model's kind. */
const INTERACTION_REFERENCES = { deviceCode: 'DeviceCode', parJti: 'PushedAuthorizationRequest' } as const

/** The row id of a model: its id for a client or a grant, else the SHA-256 of it. */
export function storedId (kind: string, id: string): string {
  if (NAMED_BY_IDENTIFIER.has(kind)) return id
  return id.startsWith(REFERENCE) ? id.slice(REFERENCE.length) : hashToken(id)
}

export const referenceTo = (storedModelId: string) => REFERENCE + storedModelId
export const isReference = (id: string) => id.startsWith(REFERENCE)

/** A device's user code as stored and looked up: hashed (marked, so that a payload read back and saved again keeps it). */
export function storedUserCode (userCode: string): string {
  return `sha256:${hashToken(userCode)}`
}

/** The payload as stored: no raw id in it, nor any other model's secret id. */
export function storedPayload (kind: string, payload: Record<string, unknown>): Record<string, unknown> {
  if (NAMED_BY_IDENTIFIER.has(kind)) return payload
  const { jti: _id, ...stored } = payload
  // A user code is letters and digits: one with the mark is a stored one, read back with its model.
  if (typeof stored.userCode === 'string' && !stored.userCode.startsWith('sha256:')) stored.userCode = storedUserCode(stored.userCode)
  if (kind === 'Interaction') {
    for (const [field, referencedKind] of Object.entries(INTERACTION_REFERENCES)) {
      const id = stored[field]
      if (typeof id === 'string') stored[field] = referenceTo(storedId(referencedKind, id))
    }
    // The browser session's id (its _session cookie); oidc-provider writes it here and never reads it back.
    if (typeof stored.session === 'object' && stored.session !== null) {
      const { cookie: _cookie, ...session } = stored.session as Record<string, unknown>
      stored.session = session
    }
  }
  return stored
}

/** The payload as oidc-provider reads it back: with its id (the one it was found by, or a reference to its row). */
export function givenPayload (kind: string, id: string, payload: Record<string, unknown>): Record<string, unknown> {
  return NAMED_BY_IDENTIFIER.has(kind) ? payload : { ...payload, jti: id }
}

/**
 * Whether a model may be found by a reference: only when the interaction that the request resumes (found
 * by its own uid, from the browser's signed cookie) names it; oidc-provider then loads the device code or
 * the pushed request it started from. Anywhere else (a device code at the token endpoint) a reference
 * is what a copy of the store would give, and finds nothing.
 */
export function acceptsReference (id: string, interaction: Record<string, unknown> | undefined): boolean {
  return interaction !== undefined && Object.keys(INTERACTION_REFERENCES).some(field => interaction[field] === id)
}

/** A row from before ids were hashed: its payload still holds its id. */
export function isLegacyRow (kind: string, payload: Record<string, unknown>): boolean {
  return !NAMED_BY_IDENTIFIER.has(kind) && typeof payload.jti === 'string'
}
