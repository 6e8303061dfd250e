import { createHash, createPrivateKey, createPublicKey, generateKeyPairSync, type JsonWebKey, type KeyObject } from 'node:crypto'
import type { AccountStore, SigningKeyRecord } from '../../db/store.js'
import type { PublicJwkType } from '../schemas/auth.js'

export type SigningAlgorithm = SigningKeyRecord['algorithm']

export interface SigningKey {
  kid: string
  algorithm: SigningAlgorithm
  privateKeyPem: string
  publicKeyPem: string
  /** The public key as published at /.well-known/jwks.json. */
  publicJwk: PublicJwkType
}

/** A configured private key that is not Ed25519 or P-256. */
export class UnsupportedKeyError extends Error {}

/**
 * The key that signs access tokens: JWT_PRIVATE_KEY when configured, else the
 * key kept in the store, else a new Ed25519 key that is stored for the next
 * start (and for the other instances sharing the store).
 */
export async function loadSigningKey (store: AccountStore, configuredPrivateKeyPem?: string): Promise<SigningKey> {
  if (configuredPrivateKeyPem !== undefined) {
    // Environment variables often carry PEM line breaks as the two characters "\n".
    return describeKey(createPrivateKey(configuredPrivateKeyPem.replaceAll('\\n', '\n')))
  }
  let newest = (await store.listSigningKeys()).at(-1)
  if (newest === undefined) {
    const generated = describeKey(generateKeyPairSync('ed25519').privateKey)
    // onlyIfNone: of several instances starting together on one store, the first key stored wins.
    await store.addSigningKey({ ...recordOf(generated), createdAt: new Date() }, { onlyIfNone: true })
    newest = (await store.listSigningKeys()).at(-1)
  }
  if (newest === undefined) throw new Error('the store kept no signing key')
  return describeKey(createPrivateKey(newest.privateKeyPem))
}

function describeKey (privateKey: KeyObject): SigningKey {
  const algorithm = algorithmOf(privateKey)
  const publicKey = createPublicKey(privateKey)
  const jwk = publicKey.export({ format: 'jwk' })
  const kid = thumbprint(jwk)
  return {
    kid,
    algorithm,
    privateKeyPem: privateKey.export({ format: 'pem', type: 'pkcs8' }).toString(),
    publicKeyPem: publicKey.export({ format: 'pem', type: 'spki' }).toString(),
    publicJwk: { kty: String(jwk.kty), crv: String(jwk.crv), x: String(jwk.x), ...(jwk.y === undefined ? {} : { y: jwk.y }), kid, alg: algorithm, use: 'sig' }
  }
}

function algorithmOf (key: KeyObject): SigningAlgorithm {
  if (key.asymmetricKeyType === 'ed25519') return 'EdDSA'
  if (key.asymmetricKeyType === 'ec' && key.asymmetricKeyDetails?.namedCurve === 'prime256v1') return 'ES256'
  throw new UnsupportedKeyError(`JWT_PRIVATE_KEY must be an Ed25519 or P-256 private key, not ${key.asymmetricKeyType ?? 'unknown'}`)
}

/** RFC 7638 JWK thumbprint: a kid that names the key itself. */
function thumbprint (jwk: JsonWebKey): string {
  const members = jwk.kty === 'OKP'
    ? { crv: jwk.crv, kty: jwk.kty, x: jwk.x }
    : { crv: jwk.crv, kty: jwk.kty, x: jwk.x, y: jwk.y }
  return createHash('sha256').update(JSON.stringify(members)).digest('base64url')
}

function recordOf (key: SigningKey): Omit<SigningKeyRecord, 'createdAt'> {
  return { kid: key.kid, algorithm: key.algorithm, publicKeyPem: key.publicKeyPem, privateKeyPem: key.privateKeyPem }
}

/** A new Ed25519 signing key as the store keeps it (`account-service keys rotate`). */
export function newSigningKeyRecord (): SigningKeyRecord {
  return { ...recordOf(describeKey(generateKeyPairSync('ed25519').privateKey)), createdAt: new Date() }
}
