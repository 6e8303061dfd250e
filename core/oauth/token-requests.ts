import { parse as parseForm } from 'node:querystring'
import type { IncomingHttpHeaders } from 'node:http'
import type Provider from 'oidc-provider'

/*
 * What the token endpoint's fast paths (client-credentials-grant.ts, authorization-code-grant.ts) read of a
 * request before they serve it, each as oidc-provider reads it (lib/actions/token.js, lib/shared/client_auth.js,
 * selective_body.js): the form, its parameters and the client's credentials. Anything these refuse goes to
 * oidc-provider unchanged, which answers it.
 */

/** The headers oidc-provider reads on the token endpoint beyond the credentials (DPoP, client attestation, CORS): present, it answers. */
const PROVIDER_HEADERS = ['dpop', 'oauth-client-attestation', 'oauth-client-attestation-pop', 'origin'] as const

/** The form type oidc-provider reads (selective_body.js), in UTF-8. */
const FORM_TYPE = /^application\/x-www-form-urlencoded\s*(?:;\s*charset="?utf-8"?\s*)?$/i

/** The registered client authentications that take a secret by either way (oidc-provider's client_auth.js lets both in). */
const SECRET_METHODS = new Set(['client_secret_basic', 'client_secret_post'])

/** oidc-provider's check of a Basic credential's decoded parts (consts/client_attributes.js noVSCHAR). */
const NOT_VSCHAR = /[^\x20-\x7E]/

/**
 * The headers of oidc-provider's token answer beside its JSON: no-store (its noCache), and what its CORS middleware of the
 * token endpoint sets for a request without Origin (lib/shared/cors.js: any origin, the DPoP nonce and WWW-Authenticate readable).
 */
export const TOKEN_ANSWER_HEADERS = {
  'cache-control': 'no-store',
  vary: 'Origin',
  'access-control-allow-origin': '*',
  'access-control-expose-headers': 'DPoP-Nonce,WWW-Authenticate'
} as const

export interface TokenRequest {
  /** The form as read (the route's parser: application/x-www-form-urlencoded, TOKEN_BODY_LIMIT). */
  form: Buffer
  headers: IncomingHttpHeaders
}

/** A token endpoint answer given by a fast path: its status and JSON, the members in oidc-provider's order (buildTokenResponse). */
export interface TokenAnswer {
  statusCode: number
  body: Record<string, unknown>
}

/** A token request as the fast paths read it (tokenFormOf): its form's parameters, each named once, and its Authorization header. */
export interface TokenForm {
  parameters: Map<string, string>
  authorization?: string
}

/** A fast path of one grant type: the answer, or undefined for oidc-provider to answer the request. */
export type TokenGrant = (form: TokenForm) => Promise<TokenAnswer | undefined>

/** The client's credentials as a request presents them: a secret by HTTP Basic or the form, or none (a public client's client_id). */
export interface PresentedCredentials {
  clientId: string
  secret?: string
}

/** Base64 as oidc-provider's client_auth.js isValidBase64 takes it. */
function isValidBase64 (input: string): boolean {
  const match = /^([A-Za-z0-9+/]*)(={0,2})$/u.exec(input)
  if (match?.[1] === undefined || match[1] === '') return false
  const remainder = match[1].length % 4
  if (match[2] === '') return remainder !== 1
  return (match[1].length + match[2].length) % 4 === 0 && match[2].length === 4 - remainder
}

/** One part of an HTTP Basic credential, form-decoded (RFC 6749 §2.3.1); undefined where oidc-provider refuses it. */
function decodeBasicPart (part: string): string | undefined {
  try {
    const decoded = decodeURIComponent(part.replace(/\+/g, '%20'))
    return NOT_VSCHAR.test(decoded) ? undefined : decoded
  } catch {
    return undefined
  }
}

/**
 * The request as a fast path may serve it: a UTF-8 form without the headers oidc-provider answers (DPoP, client
 * attestation, a browser's Origin), read once, no parameter repeated. An empty parameter is absent, as oidc-provider's
 * Params reads it. Undefined for any other request.
 */
export function tokenFormOf ({ form, headers }: TokenRequest): TokenForm | undefined {
  if (!FORM_TYPE.test(headers['content-type'] ?? '') || PROVIDER_HEADERS.some(name => headers[name] !== undefined)) return undefined
  const parameters = new Map<string, string>()
  for (const [name, value] of Object.entries(parseForm(form.toString()))) {
    if (typeof value !== 'string') return undefined
    if (value !== '') parameters.set(name, value)
  }
  return { parameters, authorization: headers.authorization }
}

/** Whether every parameter of the form is one of `served` (any other is oidc-provider's to answer). */
export function onlyServed (parameters: Map<string, string>, served: ReadonlySet<string>): boolean {
  for (const name of parameters.keys()) if (!served.has(name)) return false
  return true
}

/**
 * The client's id and credential, given one way only: HTTP Basic, the form's client_secret, or (`publicClients`) the
 * form's client_id alone; undefined for anything else.
 */
export function credentialsOf ({ parameters, authorization }: TokenForm, { publicClients = false } = {}): PresentedCredentials | undefined {
  const clientId = parameters.get('client_id')
  const clientSecret = parameters.get('client_secret')
  if (authorization === undefined) {
    if (clientId === undefined) return undefined
    if (clientSecret !== undefined) return { clientId, secret: clientSecret }
    return publicClients ? { clientId } : undefined
  }
  if (clientSecret !== undefined) return undefined
  const parts = authorization.split(' ')
  if (parts.length !== 2 || parts[0].toLowerCase() !== 'basic' || !isValidBase64(parts[1])) return undefined
  const basic = Buffer.from(parts[1], 'base64').toString('utf8')
  const colon = basic.indexOf(':')
  if (colon === -1) return undefined
  const basicId = decodeBasicPart(basic.slice(0, colon))
  const secret = decodeBasicPart(basic.slice(colon + 1))
  if (basicId === undefined || secret === undefined || secret === '' || basicId === '') return undefined
  return clientId === undefined || clientId === basicId ? { clientId: basicId, secret } : undefined
}

/** The client of `credentials` authenticated as oidc-provider would let it in, or undefined (unknown, another method, a wrong or expiring secret). */
export async function authenticatedClient (provider: Provider, credentials: PresentedCredentials): Promise<InstanceType<Provider['Client']> | undefined> {
  const client = await provider.Client.find(credentials.clientId)
  if (client === undefined) return undefined
  const method = String(client.clientAuthMethod)
  if (credentials.secret === undefined) return method === 'none' ? client : undefined
  // A secret with an expiry is left to oidc-provider's check of it (checkClientSecretExpiration).
  if (!SECRET_METHODS.has(method) || (client.clientSecretExpiresAt ?? 0) !== 0) return undefined
  return await client.compareClientSecret(credentials.secret) ? client : undefined
}
