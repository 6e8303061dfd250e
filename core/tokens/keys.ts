import { createHash, createPrivateKey, createPublicKey, generateKeyPair, type JsonWebKey, type KeyObject } from 'node:crypto'
import { promisify } from 'node:util'
import type { SigningKeyAlgorithm, SigningKeyRecord, SigningKeysStore } from '../../db/store.js'
import type { PublicJwkType } from '../schemas/auth.js'
import { isSealed, UnsealError, type Sealer } from '../secrets/sealing.js'

export type SigningAlgorithm = SigningKeyAlgorithm

/**
 * Keys come in two kinds, each with its own newest key that signs and its own rotation: the service's
 * key (EdDSA, or ES256) signs its access tokens, status lists, apps' access tokens and the ID tokens of
 * apps that ask for EdDSA; the RS256 key signs the ID tokens of every other app (RS256 is OpenID
 * Connect's mandatory algorithm and the default of an app that names none).
 */
export type KeyKind = 'service' | 'RS256'
export const KEY_KINDS: readonly KeyKind[] = ['service', 'RS256']
export const kindOf = (algorithm: SigningAlgorithm): KeyKind => algorithm === 'RS256' ? 'RS256' : 'service'
const ALGORITHMS_OF: Record<KeyKind, readonly SigningAlgorithm[]> = { service: ['EdDSA', 'ES256'], RS256: ['RS256'] }

/** The size of the RSA keys made here; a configured or stored RSA key must be at least this big. */
export const RSA_MODULUS_BITS = 2048

/** A key as every instance publishes and verifies with it. */
export interface PublicKeyDescription {
  kid: string
  algorithm: SigningAlgorithm
  publicKeyPem: string
  /** The public key as published at /.well-known/jwks.json. */
  publicJwk: PublicJwkType
}

/** A key that signs: its private half in clear, in memory only. */
export interface SigningKey extends PublicKeyDescription {
  privateKeyPem: string
}

/** A configured private key that is not Ed25519 or P-256 (or a stored RSA key under 2048 bits). */
export class UnsupportedKeyError extends Error {}

/**
 * The store's sealed key does not open: SIGNING_KEY_ENCRYPTION_KEY is missing or is another key than
 * the one that sealed it. The message names the setting (the start fails with it).
 */
export class SigningKeyEncryptionError extends Error {}

/** The key of JWT_PRIVATE_KEY: when configured, it alone signs and verifies. */
export function configuredSigningKey (privateKeyPem: string): SigningKey {
  // Environment variables often carry PEM line breaks as the two characters "\n".
  const privateKey = createPrivateKey(privateKeyPem.replaceAll('\\n', '\n'))
  // It is the service's key: the RS256 key of the ID tokens is always the store's.
  if (privateKey.asymmetricKeyType === 'rsa') throw new UnsupportedKeyError('JWT_PRIVATE_KEY must be an Ed25519 or P-256 private key, not rsa')
  return describeKey(privateKey)
}

const generateKeyPairAsync = promisify(generateKeyPair)

/** A new private key of this algorithm (an RSA one takes 50 to 200 ms, off the event loop). */
async function generateKey (algorithm: SigningAlgorithm): Promise<KeyObject> {
  switch (algorithm) {
    case 'EdDSA': return (await generateKeyPairAsync('ed25519')).privateKey
    case 'ES256': return (await generateKeyPairAsync('ec', { namedCurve: 'P-256' })).privateKey
    case 'RS256': return (await generateKeyPairAsync('rsa', { modulusLength: RSA_MODULUS_BITS })).privateKey
  }
}

/**
 * Stores a first key of a kind when the store has none of it (Ed25519 for the service's, RS256 for the
 * ID tokens'); of several instances doing so together on one store, the first key stored wins.
 * With a sealer (SIGNING_KEY_ENCRYPTION_KEY), its private half is stored sealed.
 */
export async function storeFirstSigningKey (store: SigningKeysStore, { kind, sealer, now }: { kind: KeyKind, sealer: Sealer | undefined, now: Date }): Promise<void> {
  const generated = describeKey(await generateKey(kind === 'RS256' ? 'RS256' : 'EdDSA'))
  await store.addSigningKey({ ...recordOf(generated, sealer), createdAt: now }, { onlyIfNoneOf: ALGORITHMS_OF[kind] })
}

/** A stored key as the service uses it: its private half opened, or null once the key is retired. */
export interface StoredSigningKey extends PublicKeyDescription {
  privateKeyPem: string | null
  createdAt: Date
}

/** The newest key of each kind in `records` (oldest first): the keys that sign. */
export function newestOfEachKind<Key extends { algorithm: SigningAlgorithm }> (records: readonly Key[]): Key[] {
  return KEY_KINDS.flatMap(kind => records.filter(record => kindOf(record.algorithm) === kind).at(-1) ?? [])
}

/**
 * The store's keys of these kinds, oldest first, described (kid, algorithm, JWK), the newest of each
 * kind with its private half opened. Only those sign, so loading also tidies the store: an older key's
 * private half is deleted (an instance still signing with it in memory goes on until its next reload),
 * and with a sealer a signing key's private half, if stored in clear (before SIGNING_KEY_ENCRYPTION_KEY
 * was set), is sealed. A sealed key without a sealer, or one the sealer cannot open, throws
 * SigningKeyEncryptionError before anything is written.
 */
export async function loadStoredKeys (store: SigningKeysStore, sealer?: Sealer, kinds: readonly KeyKind[] = KEY_KINDS): Promise<StoredSigningKey[]> {
  const records = (await store.listSigningKeys()).filter(record => kinds.includes(kindOf(record.algorithm)))
  const signing = newestOfEachKind(records)
  const opened = new Map(signing.map(record => [record.kid, openPrivateHalf(record, sealer)]))
  for (const record of signing) {
    if (sealer !== undefined && record.privateKeyPem !== null && !isSealed(record.privateKeyPem)) {
      // Compare-and-set: of instances sealing it together, the first wins (each seal opens with the same key).
      await store.replaceSigningKeyPrivateHalf(record.kid, record.privateKeyPem, sealer.seal(record.privateKeyPem, record.kid))
    }
  }
  await deletePrivateHalves(store, records.filter(record => !signing.includes(record)))
  return records.map(record => ({
    ...describePublicKey(createPublicKey(record.publicKeyPem)),
    privateKeyPem: opened.get(record.kid) ?? null,
    createdAt: record.createdAt
  }))
}

/** The newest key's private half in clear; undefined when it has none (a store written by hand). */
function openPrivateHalf (record: SigningKeyRecord, sealer: Sealer | undefined): string | undefined {
  const stored = record.privateKeyPem
  if (stored === null) return undefined
  if (!isSealed(stored)) return stored
  if (sealer === undefined) {
    throw new SigningKeyEncryptionError(`SIGNING_KEY_ENCRYPTION_KEY is not set, but the signing key ${record.kid} in the store is sealed: set the key that sealed it`)
  }
  try {
    return sealer.open(stored, record.kid)
  } catch (error) {
    if (!(error instanceof UnsealError)) throw error
    throw new SigningKeyEncryptionError(`SIGNING_KEY_ENCRYPTION_KEY does not open the signing key ${record.kid} in the store (another key sealed it): set the key that sealed it`)
  }
}

/** Every key but the newest of its kind only verifies: the private halves of `retired` go. */
async function deletePrivateHalves (store: SigningKeysStore, retired: readonly SigningKeyRecord[]): Promise<void> {
  for (const record of retired) {
    if (record.privateKeyPem !== null) await store.replaceSigningKeyPrivateHalf(record.kid, record.privateKeyPem, null)
  }
}

/**
 * The keys that still verify access tokens at `now`: the newest (it signs) and
 * every older key whose successor was added less than `retentionMs` ago
 * (ACCESS_TOKEN_TTL plus clock leeway: after that, no token it signed is still
 * valid). `keys` is oldest first, as loadStoredKeys gives them, and of one kind.
 */
export function verifyingKeys<Key extends { createdAt: Date }> (keys: readonly Key[], now: Date, retentionMs: number): Key[] {
  return keys.filter((_key, index) => {
    const successor = keys[index + 1]
    return successor === undefined || now.getTime() - successor.createdAt.getTime() < retentionMs
  })
}

export interface RotateOptions {
  /** EdDSA (Ed25519, the default) or ES256 (P-256): the service's key; RS256 (2048 bits): the ID tokens' key. */
  algorithm?: SigningAlgorithm
  now?: Date
  /** SIGNING_KEY_ENCRYPTION_KEY's sealer: the new key's private half is stored sealed. */
  sealer?: Sealer
}

/**
 * Adds a new signing key to the store and returns it. Every instance signs with
 * it once it reloads its keys (on a timer, SIGNING_KEY_RELOAD_INTERVAL, or at
 * once when a token names its kid); older keys of its kind keep verifying until
 * the tokens they signed have expired (from their public halves: the private
 * halves of the older keys of its kind are deleted here).
 */
export async function rotateSigningKey (store: SigningKeysStore, { algorithm = 'EdDSA', now = new Date(), sealer }: RotateOptions = {}): Promise<StoredSigningKey> {
  const generated = await generateKey(algorithm)
  const older = await store.listSigningKeys()
  refuseToUnseal(older, sealer)
  const newest = older.at(-1)
  // Keys are ordered by creation time: the new key must come strictly after the current newest.
  const createdAt = newest !== undefined && newest.createdAt >= now ? new Date(newest.createdAt.getTime() + 1) : now
  const key = { ...describeKey(generated), createdAt }
  await store.addSigningKey({ ...recordOf(key, sealer), createdAt })
  await deletePrivateHalves(store, older.filter(record => kindOf(record.algorithm) === kindOf(algorithm)))
  return key
}

/**
 * Rotates both kinds: a new Ed25519 key for the service, then a new RS256 key for the ID tokens.
 * The admin command `account-service keys rotate` calls this.
 */
export async function rotateSigningKeys (store: SigningKeysStore, { now = new Date(), sealer }: Omit<RotateOptions, 'algorithm'> = {}): Promise<StoredSigningKey[]> {
  const service = await rotateSigningKey(store, { algorithm: 'EdDSA', now, sealer })
  return [service, await rotateSigningKey(store, { algorithm: 'RS256', now, sealer })]
}

/**
 * A store whose keys are sealed gets no key in clear (issue 21, finding 11): without a sealer, or with
 * one that does not open the sealed key (another SIGNING_KEY_ENCRYPTION_KEY, which the service could
 * not open the new key with either), rotation throws SigningKeyEncryptionError before writing anything.
 */
function refuseToUnseal (keys: readonly SigningKeyRecord[], sealer: Sealer | undefined): void {
  const sealed = keys.filter(record => record.privateKeyPem !== null && isSealed(record.privateKeyPem)).at(-1)
  if (sealed === undefined) return
  if (sealer === undefined) {
    throw new SigningKeyEncryptionError(`SIGNING_KEY_ENCRYPTION_KEY is not set, but the signing keys in the store are sealed (${sealed.kid}): a new key would be stored in clear; set the key that sealed them`)
  }
  openPrivateHalf(sealed, sealer)
}

function describeKey (privateKey: KeyObject): SigningKey {
  return {
    ...describePublicKey(createPublicKey(privateKey)),
    privateKeyPem: privateKey.export({ format: 'pem', type: 'pkcs8' }).toString()
  }
}

function describePublicKey (publicKey: KeyObject): PublicKeyDescription {
  const algorithm = algorithmOf(publicKey)
  const jwk = publicKey.export({ format: 'jwk' })
  const kid = thumbprint(jwk)
  const members = jwk.kty === 'RSA'
    ? { kty: 'RSA', n: String(jwk.n), e: String(jwk.e) }
    : { kty: String(jwk.kty), crv: String(jwk.crv), x: String(jwk.x), ...(jwk.y === undefined ? {} : { y: jwk.y }) }
  return {
    kid,
    algorithm,
    publicKeyPem: publicKey.export({ format: 'pem', type: 'spki' }).toString(),
    publicJwk: { ...members, kid, alg: algorithm, use: 'sig' }
  }
}

function algorithmOf (key: KeyObject): SigningAlgorithm {
  if (key.asymmetricKeyType === 'ed25519') return 'EdDSA'
  if (key.asymmetricKeyType === 'ec' && key.asymmetricKeyDetails?.namedCurve === 'prime256v1') return 'ES256'
  if (key.asymmetricKeyType === 'rsa' && (key.asymmetricKeyDetails?.modulusLength ?? 0) >= RSA_MODULUS_BITS) return 'RS256'
  throw new UnsupportedKeyError(`JWT_PRIVATE_KEY must be an Ed25519 or P-256 private key, not ${key.asymmetricKeyType ?? 'unknown'}`)
}

/** RFC 7638 JWK thumbprint: a kid that names the key itself (its required members, in lexical order). */
function thumbprint (jwk: JsonWebKey): string {
  const members = jwk.kty === 'OKP'
    ? { crv: jwk.crv, kty: jwk.kty, x: jwk.x }
    : jwk.kty === 'RSA'
      ? { e: jwk.e, kty: jwk.kty, n: jwk.n }
      : { crv: jwk.crv, kty: jwk.kty, x: jwk.x, y: jwk.y }
  return createHash('sha256').update(JSON.stringify(members)).digest('base64url')
}

/** The row of a key; with a sealer its private half is sealed, the kid as associated data (a sealed half moved to another row does not open). */
function recordOf (key: SigningKey, sealer: Sealer | undefined): Omit<SigningKeyRecord, 'createdAt'> {
  const privateKeyPem = sealer === undefined ? key.privateKeyPem : sealer.seal(key.privateKeyPem, key.kid)
  return { kid: key.kid, algorithm: key.algorithm, publicKeyPem: key.publicKeyPem, privateKeyPem }
}
