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

/** The key of JWT_PRIVATE_KEY: when configured, it alone signs and verifies. */
export function configuredSigningKey (privateKeyPem: string): SigningKey {
  // Environment variables often carry PEM line breaks as the two characters "\n".
  return describeKey(createPrivateKey(privateKeyPem.replaceAll('\\n', '\n')))
}

/**
 * Stores a new Ed25519 key when the store has none (a fresh store); of several
 * instances starting together on one store, the first key stored wins (onlyIfNone).
 */
export async function storeFirstSigningKey (store: AccountStore): Promise<void> {
  const generated = describeKey(generateKeyPairSync('ed25519').privateKey)
  await store.addSigningKey({ ...recordOf(generated), createdAt: new Date() }, { onlyIfNone: true })
}

/** A stored key as the service uses it, with the time it was added to the store. */
export interface StoredSigningKey extends SigningKey {
  createdAt: Date
}

/** The store's keys, oldest first, described (kid, algorithm, JWK). */
export async function loadStoredKeys (store: AccountStore): Promise<StoredSigningKey[]> {
  return (await store.listSigningKeys()).map(record => ({ ...describeKey(createPrivateKey(record.privateKeyPem)), createdAt: record.createdAt }))
}

/**
 * The keys that still verify access tokens at `now`: the newest (it signs) and
 * every older key whose successor was added less than `retentionMs` ago
 * (ACCESS_TOKEN_TTL plus clock leeway: after that, no token it signed is still
 * valid). `keys` is oldest first, as loadStoredKeys gives them.
 */
export function verifyingKeys<Key extends { createdAt: Date }> (keys: readonly Key[], now: Date, retentionMs: number): Key[] {
  return keys.filter((_key, index) => {
    const successor = keys[index + 1]
    return successor === undefined || now.getTime() - successor.createdAt.getTime() < retentionMs
  })
}

export interface RotateOptions {
  /** EdDSA (Ed25519, the default) or ES256 (P-256). */
  algorithm?: SigningAlgorithm
  now?: Date
}

/**
 * Adds a new signing key to the store and returns it. Every instance signs with
 * it once it reloads its keys (on a timer, SIGNING_KEY_RELOAD_INTERVAL, or at
 * once when a token names its kid); older keys keep verifying until the tokens
 * they signed have expired. The admin command `account-service keys rotate`
 * calls this.
 */
export async function rotateSigningKey (store: AccountStore, { algorithm = 'EdDSA', now = new Date() }: RotateOptions = {}): Promise<StoredSigningKey> {
  const generated = algorithm === 'EdDSA'
    ? generateKeyPairSync('ed25519').privateKey
    : generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey
  const newest = (await store.listSigningKeys()).at(-1)
  // Keys are ordered by creation time: the new key must come strictly after the current newest.
  const createdAt = newest !== undefined && newest.createdAt >= now ? new Date(newest.createdAt.getTime() + 1) : now
  const key = { ...describeKey(generated), createdAt }
  await store.addSigningKey({ ...recordOf(key), createdAt })
  return key
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
