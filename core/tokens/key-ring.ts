import { createPrivateKey, type JsonWebKey } from 'node:crypto'
import { createSigner, createVerifier } from 'fast-jwt'
import type { SigningKeysStore } from '../../db/store.js'
import { currentDate, type Clock } from '../clock.js'
import type { Logger } from '../logger.js'
import { runPeriodically } from '../periodic.js'
import { createSealer } from '../secrets/sealing.js'
import { configuredSigningKey, loadStoredKeys, rotateSigningKey, storeFirstSigningKey, type PublicKeyDescription } from './keys.js'

export interface KeyRingDependencies {
  store: SigningKeysStore
  clock: Clock
  log: Logger
}

export interface KeyRingOptions {
  accessTokenTtlSeconds: number
  issuer: string
  audience: string
  privateKeyPem?: string
  /** SIGNING_KEY_ENCRYPTION_KEY: seals the private half of the stored signing key. */
  signingKeyEncryptionKey?: Buffer
  /** Production: without signingKeyEncryptionKey, say once that the stored key is in clear. */
  warnWhenUnsealed?: boolean
  /** How often the keys are read from the store again (and, with rotateAfterSeconds, rotated). */
  reloadIntervalSeconds: number
  /** Rotate once the newest key is this old; 0 never rotates automatically. */
  rotateAfterSeconds: number
}

/** The payload of an access token as signed and verified. */
export interface AccessTokenPayload {
  sub: string
  sid: string
  iat: number
  exp: number
  status?: object
}

/** The contract allows at most 1 s: a token from the future by more than this is refused; exp gets none. */
export const CLOCK_LEEWAY_MS = 1000
/** A token naming an unknown kid reads the store again at most this often (forged kids must not flood it). */
export const UNKNOWN_KID_RELOAD_GAP_MS = 1000

/** One key, ready to sign and verify; kept across reloads (its verifier is made once). */
export interface KeyEntry {
  key: PublicKeyDescription & { createdAt?: Date }
  /** Signature, algorithm, issuer, audience and required claims; not the time (see entryFor). */
  verify (token: string): AccessTokenPayload
  /** When a successor has signed long enough for every token of this key to have expired; Infinity for the newest. */
  retiresAt: number
}

/** The signing keys of the access tokens and of the status lists: the newest signs, every key we ever had is known by kid. */
export interface KeyRing {
  /** Signs an access token's claims with the newest key: its kid, our issuer and audience, exp = iat + ACCESS_TOKEN_TTL. */
  signAccessToken (payload: object): string
  /** Signs a Token Status List (typ statuslist+jwt) with the newest key; the payload carries its own iat and exp. */
  signStatusList (payload: object): string
  /**
   * The key of this kid; one not known makes the ring read the store again (a key added elsewhere),
   * at most once per UNKNOWN_KID_RELOAD_GAP_MS. A configured key (JWT_PRIVATE_KEY) is the only key.
   */
  keyFor (kid: string): Promise<KeyEntry | undefined>
  /**
   * The newest key as a private JWK (kid, alg, use "sig"): the OAuth provider (core/oauth/) signs ID
   * tokens and apps' access tokens with it, so that one JWKS verifies everything the service signs.
   */
  readonly signingJwk: SigningJwk
  /** The public keys that still verify at the clock's now: every key not yet retired. */
  readonly jwks: { keys: Array<PublicKeyDescription['publicJwk']> }
  /**
   * Grows whenever a reload changes the keys (one added or gone, a retirement set): what was verified
   * with the keys before may no longer hold (core/tokens/access-tokens.ts empties its cache).
   */
  readonly generation: number
  /** Reads the keys from the store again; of calls under way together, one reads. */
  reload (): Promise<void>
  /** Stops the timer that reloads (and rotates) the keys; resolves when the run under way has ended. */
  close (): Promise<void>
}

/** A private JWK that signs, as oidc-provider takes it. */
export type SigningJwk = JsonWebKey & { kid: string, alg: 'EdDSA' | 'ES256', use: 'sig' }

interface Keys {
  signer: { kid: string, sign (payload: object): string }
  signingJwk: SigningJwk
  statusListSigner (payload: object): string
  /** Every key we ever had, by kid. */
  entries: Map<string, KeyEntry>
}

/**
 * The key ring of the access tokens: the keys of the store (created at the first start, rotated by
 * core/tokens/keys.ts), or JWT_PRIVATE_KEY alone. Keys rotate: the newest signs, older ones verify
 * until their last token has expired. Every instance reads the store again on a timer
 * (SIGNING_KEY_RELOAD_INTERVAL), rotating by age when SIGNING_KEY_ROTATE_AFTER asks for it.
 */
export async function createKeyRing ({ store, clock, log }: KeyRingDependencies, options: KeyRingOptions): Promise<KeyRing> {
  const ttlMs = options.accessTokenTtlSeconds * 1000
  const retentionMs = ttlMs + CLOCK_LEEWAY_MS
  const configuredKey = options.privateKeyPem === undefined ? undefined : configuredSigningKey(options.privateKeyPem)
  const sealer = options.signingKeyEncryptionKey === undefined ? undefined : createSealer(options.signingKeyEncryptionKey)

  const verifierOptions = {
    allowedIss: options.issuer,
    allowedAud: options.audience,
    requiredClaims: ['sub', 'sid', 'iat', 'exp', 'iss', 'aud'],
    clockTolerance: 0
  }
  function entryFor (key: KeyEntry['key'], retiresAt: number, previous?: KeyEntry): KeyEntry {
    if (previous !== undefined) return { ...previous, retiresAt }
    // One verifier per key. It checks the signature and the claims but not the time: expiry is checked
    // against the app's clock (core/tokens/access-tokens.ts; fast-jwt reads Date.now()), which also lets the
    // header variant's refresh accept an expired token. No cache of fast-jwt's (a SHA-256 of the token per
    // lookup): access-tokens.ts keeps the verified tokens by the token itself.
    return {
      key,
      retiresAt,
      verify: createVerifier({ ...verifierOptions, key: key.publicKeyPem, algorithms: [key.algorithm], ignoreExpiration: true }) as KeyEntry['verify']
    }
  }

  async function loadKeys (previous?: Keys): Promise<Keys> {
    let keys: Array<KeyEntry['key'] & { privateKeyPem: string | null }>
    if (configuredKey !== undefined) {
      keys = [configuredKey]
    } else {
      keys = await loadStoredKeys(store, sealer)
      if (keys.length === 0) {
        await storeFirstSigningKey(store, sealer, currentDate(clock))
        keys = await loadStoredKeys(store, sealer)
      }
    }
    const entries = new Map<string, KeyEntry>()
    keys.forEach((key, index) => {
      const successorCreatedAt = keys[index + 1]?.createdAt
      const retiresAt = successorCreatedAt === undefined ? Infinity : successorCreatedAt.getTime() + retentionMs
      entries.set(key.kid, entryFor(key, retiresAt, previous?.entries.get(key.kid)))
    })
    const newest = keys[keys.length - 1]
    const privateKeyPem = newest.privateKeyPem
    if (privateKeyPem === null) throw new Error(`the newest signing key ${newest.kid} has no private half in the store: add one with account-service keys rotate`)
    const sign = createSigner({
      key: privateKeyPem,
      algorithm: newest.algorithm,
      kid: newest.kid,
      iss: options.issuer,
      aud: options.audience,
      expiresIn: ttlMs
    })
    const statusListSigner = createSigner({ key: privateKeyPem, algorithm: newest.algorithm, kid: newest.kid, header: { alg: newest.algorithm, typ: 'statuslist+jwt' } })
    const signingJwk: SigningJwk = { ...createPrivateKey(privateKeyPem).export({ format: 'jwk' }), kid: newest.kid, alg: newest.algorithm, use: 'sig' }
    return { signer: { kid: newest.kid, sign }, signingJwk, statusListSigner, entries }
  }

  let keys = await loadKeys()
  let generation = 0
  /** The kids and retirements of a set of keys: a reload that changes this is a new generation. */
  const shapeOf = ({ entries }: Keys) => [...entries].map(([kid, entry]) => `${kid}:${entry.retiresAt}`).join(',')
  // After the load: a store whose key is sealed has already refused the start, naming the setting.
  if (configuredKey === undefined && sealer === undefined && options.warnWhenUnsealed === true) {
    log.warn('SIGNING_KEY_ENCRYPTION_KEY is not set: the private signing key is stored in clear (make one with openssl rand -base64 32)')
  }
  let reloading: Promise<void> | undefined
  let lastKidReloadAt = -Infinity

  function reload (): Promise<void> {
    reloading ??= loadKeys(keys)
      .then((loaded) => {
        if (shapeOf(loaded) !== shapeOf(keys)) generation += 1
        keys = loaded
      })
      .finally(() => { reloading = undefined })
    return reloading
  }

  // Picks up keys added elsewhere, and rotates by age when SIGNING_KEY_ROTATE_AFTER asks for it.
  const reloader = configuredKey === undefined
    ? runPeriodically(options.reloadIntervalSeconds * 1000, async () => {
      const rotateAfterMs = options.rotateAfterSeconds * 1000
      const createdAt = keys.entries.get(keys.signer.kid)?.key.createdAt
      if (rotateAfterMs > 0 && createdAt !== undefined && clock.now() - createdAt.getTime() >= rotateAfterMs) {
        await rotateSigningKey(store, { sealer, now: currentDate(clock) })
        log.info('signing key rotated (SIGNING_KEY_ROTATE_AFTER)')
      }
      await reload()
    }, { onError: (error) => { log.warn({ err: error }, 'signing keys not reloaded') } })
    : undefined

  return {
    signAccessToken: (payload) => keys.signer.sign(payload),
    signStatusList: (payload) => keys.statusListSigner(payload),
    async keyFor (kid) {
      const known = keys.entries.get(kid)
      if (known !== undefined || configuredKey !== undefined) return known
      // Requests arriving during a reload wait for it; after it, another unknown kid waits for the gap to pass.
      if (reloading === undefined) {
        if (clock.now() - lastKidReloadAt < UNKNOWN_KID_RELOAD_GAP_MS) return undefined
        lastKidReloadAt = clock.now()
      }
      await reload()
      return keys.entries.get(kid)
    },
    get signingJwk () {
      return keys.signingJwk
    },
    get generation () {
      return generation
    },
    get jwks () {
      const now = clock.now()
      return { keys: [...keys.entries.values()].filter(entry => entry.retiresAt > now).map(entry => entry.key.publicJwk) }
    },
    reload,
    async close () {
      await reloader?.stop()
    }
  }
}
