import { Type, type Static } from '@sinclair/typebox'
import type { PasskeyRecord } from '../../db/store.js'

/*
 * Passkeys (WebAuthn). The bodies are the browser's credential.toJSON() as is. Browsers add
 * fields to it over the years, so unknown fields are let through (and ignored) here, unlike the
 * rest of the API; the fields we read are checked for type and size.
 */

const base64url = (maxLength: number) => Type.String({ pattern: '^[A-Za-z0-9_-]*$', maxLength, description: 'base64url' })
/** A credential id: at most 1023 bytes (WebAuthn), so at most 1364 base64url characters. */
const CredentialId = Type.String({ pattern: '^[A-Za-z0-9_-]+$', minLength: 1, maxLength: 1364, description: 'The credential id, base64url' })
const Transports = Type.Array(Type.String({ pattern: '^[a-z-]{1,32}$' }), { maxItems: 10 })
const open = { additionalProperties: true } as const

/** 1 to 100 characters, not only spaces; stored trimmed. */
export const PasskeyName = Type.String({ minLength: 1, maxLength: 100, pattern: '^[^\\u0000]*\\S[^\\u0000]*$', description: '1 to 100 characters; trimmed' })

const credentialFields = {
  id: CredentialId,
  rawId: CredentialId,
  type: Type.Literal('public-key'),
  authenticatorAttachment: Type.Optional(Type.Union([Type.String({ maxLength: 32 }), Type.Null()])),
  clientExtensionResults: Type.Optional(Type.Object({}, open))
}

export const RegistrationCredentialBody = Type.Object({
  ...credentialFields,
  response: Type.Object({
    clientDataJSON: base64url(4096),
    attestationObject: base64url(12288),
    transports: Type.Optional(Transports)
  }, open),
  name: Type.Optional({ ...PasskeyName, description: 'Ours, beside the credential: the passkey\'s name (default "Passkey")' })
}, { ...open, description: 'The browser\'s credential.toJSON() after navigator.credentials.create(), optionally with a `name`' })

export const AuthenticationCredentialBody = Type.Object({
  ...credentialFields,
  response: Type.Object({
    clientDataJSON: base64url(4096),
    authenticatorData: base64url(4096),
    // Room for ML-DSA-87 (4,627 bytes): @simplewebauthn offers ML-DSA-44 first where the runtime has it (Node 24), and Chromium picks it.
    signature: base64url(8192),
    userHandle: Type.Optional(Type.Union([base64url(128), Type.Null()]))
  }, open)
}, { ...open, description: 'The browser\'s credential.toJSON() after navigator.credentials.get()' })

export const RenamePasskeyBody = Type.Object({ name: PasskeyName }, { additionalProperties: false })

export const PasskeyParams = Type.Object({ id: Type.String({ pattern: '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$', description: 'The passkey id (ours, not the credential id)' }) }, { additionalProperties: false })

export const PasskeyCreated = Type.Object({
  id: Type.String({ description: 'The passkey id (ours, not the credential id)' }),
  name: Type.String(),
  created_at: Type.String({ format: 'date-time' })
}, { additionalProperties: false })

export const PasskeyView = Type.Object({
  ...PasskeyCreated.properties,
  last_used_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()], { description: 'Its last login; null before the first' })
}, { additionalProperties: false })

export const PasskeysResponse = Type.Object({ passkeys: Type.Array(PasskeyView) }, { additionalProperties: false })

export function presentPasskey (passkey: PasskeyRecord): Static<typeof PasskeyView> {
  return { id: passkey.id, name: passkey.name, created_at: passkey.createdAt.toISOString(), last_used_at: passkey.lastUsedAt?.toISOString() ?? null }
}

const Descriptor = Type.Object({ id: Type.String(), type: Type.String(), transports: Type.Optional(Type.Array(Type.String())) }, open)

/** PublicKeyCredentialCreationOptionsJSON, for PublicKeyCredential.parseCreationOptionsFromJSON(). */
export const CreationOptionsResponse = Type.Object({
  challenge: Type.String(),
  rp: Type.Object({ id: Type.Optional(Type.String()), name: Type.String() }, open),
  user: Type.Object({ id: Type.String(), name: Type.String(), displayName: Type.String() }, open),
  pubKeyCredParams: Type.Array(Type.Object({ alg: Type.Integer(), type: Type.String() }, open)),
  timeout: Type.Optional(Type.Integer()),
  excludeCredentials: Type.Optional(Type.Array(Descriptor)),
  authenticatorSelection: Type.Optional(Type.Object({}, open)),
  attestation: Type.Optional(Type.String()),
  extensions: Type.Optional(Type.Object({}, open)),
  hints: Type.Optional(Type.Array(Type.String()))
}, { ...open, description: 'PublicKeyCredentialCreationOptionsJSON: pass it to PublicKeyCredential.parseCreationOptionsFromJSON()' })

/** PublicKeyCredentialRequestOptionsJSON, for PublicKeyCredential.parseRequestOptionsFromJSON(). */
export const RequestOptionsResponse = Type.Object({
  challenge: Type.String(),
  rpId: Type.Optional(Type.String()),
  timeout: Type.Optional(Type.Integer()),
  allowCredentials: Type.Optional(Type.Array(Descriptor)),
  userVerification: Type.Optional(Type.String()),
  extensions: Type.Optional(Type.Object({}, open)),
  hints: Type.Optional(Type.Array(Type.String()))
}, { ...open, description: 'PublicKeyCredentialRequestOptionsJSON: pass it to PublicKeyCredential.parseRequestOptionsFromJSON()' })
