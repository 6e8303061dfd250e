import { createPrivateKey, type JsonWebKey } from 'node:crypto'
import { createSigner, createVerifier } from 'fast-jwt'
import type { SigningKeysStore } from '../../db/store.js'
import { currentDate, type Clock } from '../clock.js'
import type { Logger } from '../logger.js'
import { runPeriodically } from '../periodic.js'
import { createSealer } from '../secrets/sealing.js'
import { configuredSigningKey, kindOf, loadStoredKeys, rotateSigningKey, storeFirstSigningKey, type KeyKind, type PublicKeyDescription } from './keys.js'

export interface KeyRingDependencies {
  store: SigningKeysStore
  clock: Clock
  log: Logger
}

export interface KeyRingOptions {
  accessTokenTtlSeconds: number
  issuer: string
  audience: string
  /** JWT_PRIVATE_KEY: the service's key (the store then keeps only the ID tokens' RS256 keys). */
  privateKeyPem?: string
  /** SIGNING_KEY_ENCRYPTION_KEY: seals the private halves of the stored signing keys. */
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
  /** The session's active organisation (POST /orgs/:orgId/activate). */
  org?: { id: number, slug: string, role: string }
}

/** The contract allows at most 1 s: a token from the future by more than this is refused; exp gets none. */
export const CLOCK_LEEWAY_MS = 1000
/** A token naming an unknown kid reads the store again at most this often (forged kids must not flood it). */
export const UNKNOWN_KID_RELOAD_GAP_MS = 1000
/**
 * ID tokens (core/oauth/provider.ts) live an hour: a key stays published that long after its successor
 * came, so that an app's id_token_hint (at logout, with prompt=none) still verifies after a rotation.
 */
export const ID_TOKEN_TTL_SECONDS = 3600

/** One key, ready to sign and verify; kept across reloads (its verifier is made once). */
export interface KeyEntry {
  key: PublicKeyDescription & { createdAt?: Date }
  /** Signature, algorithm, issuer, audience and required claims; not the time (see entryFor). */
  verify (token: string): AccessTokenPayload
  /**
   * When a successor of its kind has signed long enough for every access token of this key to have
   * expired (an RS256 key: every ID token); Infinity while it signs.
   */
  retiresAt: number
  /** Until when the JWKS (and the OAuth provider) keep its public half: every token it signed, ID tokens too, has expired. */
  publishedUntil: number
}

type PublicJwk = PublicKeyDescription['publicJwk']

/** What the OAuth provider (core/oauth/provider.ts) signs with, and the older keys it still verifies with. */
export interface ProviderKeys {
  /** The service's newest key as a private JWK: apps' access tokens, and the ID tokens of apps that ask for its algorithm. */
  service: SigningJwk
  /** The newest RS256 key as a private JWK: the ID tokens of every other app. */
  rs256: SigningJwk
  /** The public halves of older keys still published: they sign nothing, but an id_token_hint they signed verifies. */
  retired: PublicJwk[]
}

/**
 * The signing keys: the service's (access tokens, status lists) and the ID tokens' RS256 key, the newest
 * of each kind signs, every key we ever had is known by kid.
 */
export interface KeyRing {
  /** Signs an access token's claims with the newest key: its kid, our issuer and audience, exp = iat + ACCESS_TOKEN_TTL. */
  signAccessToken (payload: object): string
  /** Signs a Token Status List (typ statuslist+jwt) with the newest key; the payload carries its own iat and exp. */
  signStatusList (payload: object): string
  /**
   * The service key of this kid, which verifies access tokens; one not known makes the ring read the store
   * again (a key added elsewhere), at most once per UNKNOWN_KID_RELOAD_GAP_MS. A configured key
   * (JWT_PRIVATE_KEY) is the only one. An RS256 key signs only ID tokens: never an access token's.
   */
  keyFor (kid: string): Promise<KeyEntry | undefined>
  /**
   * The OAuth provider's keys, the same object until they change (a reload, a retired key unpublished),
   * so that one JWKS verifies everything the service signs. The first call of a process on a store with
   * no RS256 key stores one: once per store, not at each start (an RSA key takes 50 to 200 ms to make).
   */
  providerKeys (): Promise<ProviderKeys>
  /** The public keys published at the clock's now: the keys that sign, and older ones until their last token has expired. */
  readonly jwks: { keys: PublicJwk[] }
  /** The JWKS to publish: jwks, with the RS256 key made first if the store has none yet (as providerKeys). */
  publishedJwks (): Promise<{ keys: PublicJwk[] }>
  /**
   * Grows whenever a reload changes the keys (one added or gone, a retirement set): what was verified
   * with the keys before may no longer hold (core/tokens/token-verifier.ts forgets it).
   */
  readonly generation: number
  /** Reads the keys from the store again; of calls under way together, one reads. */
  reload (): Promise<void>
  /** Stops the timer that reloads (and rotates) the keys; resolves when the run under way has ended. */
  close (): Promise<void>
}

/** A private JWK that signs, as oidc-provider takes it. */
export type SigningJwk = JsonWebKey & { kid: string, alg: PublicKeyDescription['algorithm'], use: 'sig' }

interface Keys {
  signer: { kid: string, sign (payload: object): string }
  signingJwk: SigningJwk
  /** The newest RS256 key; undefined until the store has one (providerKeys makes it). */
  rs256Jwk?: SigningJwk
  statusListSigner (payload: object): string
  /** Every key we ever had, by kid. */
  entries: Map<string, KeyEntry>
}

const privateJwkOf = (key: { kid: string, algorithm: SigningJwk['alg'] }, privateKeyPem: string): SigningJwk =>
  ({ ...createPrivateKey(privateKeyPem).export({ format: 'jwk' }), kid: key.kid, alg: key.algorithm, use: 'sig' })

/**
 * The key ring: the keys of the store (the service's made at the first start, the RS256 one at the first
 * need of it; rotated by core/tokens/keys.ts), the service's being JWT_PRIVATE_KEY when that is set.
 * Keys rotate: the newest of each kind signs, older ones verify until their last token has expired.
 * Every instance reads the store again on a timer (SIGNING_KEY_RELOAD_INTERVAL), rotating by age when
 * SIGNING_KEY_ROTATE_AFTER asks for it.
 */
export async function createKeyRing ({ store, clock, log }: KeyRingDependencies, options: KeyRingOptions): Promise<KeyRing> {
  const ttlMs = options.accessTokenTtlSeconds * 1000
  /** How long after its successor came each kind of key still verifies the longest-lived token it signs. */
  const retentionMs: Record<KeyKind, number> = { service: ttlMs + CLOCK_LEEWAY_MS, RS256: ID_TOKEN_TTL_SECONDS * 1000 + CLOCK_LEEWAY_MS }
  // The service's key signs ID tokens too (of apps that ask for EdDSA): it stays published as long as an RS256 key.
  const publishedMs = Math.max(retentionMs.service, retentionMs.RS256)
  const configuredKey = options.privateKeyPem === undefined ? undefined : configuredSigningKey(options.privateKeyPem)
  const sealer = options.signingKeyEncryptionKey === undefined ? undefined : createSealer(options.signingKeyEncryptionKey)

  const verifierOptions = {
    allowedIss: options.issuer,
    allowedAud: options.audience,
    requiredClaims: ['sub', 'sid', 'iat', 'exp', 'iss', 'aud'],
    clockTolerance: 0
  }
  /** `succeededAt`: when the next key of its kind came; Infinity while it is the newest. */
  function entryFor (key: KeyEntry['key'], succeededAt: number, previous?: KeyEntry): KeyEntry {
    const retiresAt = succeededAt + retentionMs[kindOf(key.algorithm)]
    const publishedUntil = succeededAt + publishedMs
    if (previous !== undefined) return { ...previous, retiresAt, publishedUntil }
    // One verifier per key. It checks the signature and the claims but not the time: expiry is checked
    // against the app's clock (core/tokens/access-tokens.ts; fast-jwt reads Date.now()), which also lets the
    // header variant's refresh accept an expired token. No cache of fast-jwt's (a SHA-256 of the token per
    // lookup): access-tokens.ts keeps the verified tokens by the token itself.
    return {
      key,
      retiresAt,
      publishedUntil,
      verify: createVerifier({ ...verifierOptions, key: key.publicKeyPem, algorithms: [key.algorithm], ignoreExpiration: true }) as KeyEntry['verify']
    }
  }

  type LoadedKey = KeyEntry['key'] & { privateKeyPem: string | null }

  /** The keys in use, oldest first: with JWT_PRIVATE_KEY, that key and the store's RS256 keys; else the store's. */
  async function keysInUse (): Promise<LoadedKey[]> {
    if (configuredKey !== undefined) return [configuredKey, ...await loadStoredKeys(store, sealer, ['RS256'])]
    return await loadStoredKeys(store, sealer)
  }

  /** The private half of the newest key of a kind; undefined when there is none of that kind. */
  function newestOf (keys: readonly LoadedKey[], kind: KeyKind): (LoadedKey & { privateKeyPem: string }) | undefined {
    const newest = keys.filter(key => kindOf(key.algorithm) === kind).at(-1)
    if (newest === undefined) return undefined
    const { privateKeyPem } = newest
    if (privateKeyPem === null) throw new Error(`the newest signing key ${newest.kid} has no private half in the store: add one with account-service keys rotate`)
    return { ...newest, privateKeyPem }
  }

  async function loadKeys (previous?: Keys): Promise<Keys> {
    let keys = await keysInUse()
    if (newestOf(keys, 'service') === undefined) {
      await storeFirstSigningKey(store, { kind: 'service', sealer, now: currentDate(clock) })
      keys = await keysInUse()
    }
    const entries = new Map<string, KeyEntry>()
    keys.forEach((key, index) => {
      const successor = keys.slice(index + 1).find(later => kindOf(later.algorithm) === kindOf(key.algorithm))
      entries.set(key.kid, entryFor(key, successor?.createdAt?.getTime() ?? Infinity, previous?.entries.get(key.kid)))
    })
    const newest = newestOf(keys, 'service')
    if (newest === undefined) throw new Error('the store has no signing key of the service after storing one')
    const privateKeyPem = newest.privateKeyPem
    const rs256 = newestOf(keys, 'RS256')
    const sign = createSigner({
      key: privateKeyPem,
      algorithm: newest.algorithm,
      kid: newest.kid,
      iss: options.issuer,
      aud: options.audience,
      expiresIn: ttlMs
    })
    const statusListSigner = createSigner({ key: privateKeyPem, algorithm: newest.algorithm, kid: newest.kid, header: { alg: newest.algorithm, typ: 'statuslist+jwt' } })
    const rs256Jwk = rs256 === undefined ? undefined : privateJwkOf(rs256, rs256.privateKeyPem)
    return { signer: { kid: newest.kid, sign }, signingJwk: privateJwkOf(newest, privateKeyPem), rs256Jwk, statusListSigner, entries }
  }

  let keys = await loadKeys()
  let generation = 0
  /** The kids and retirements of a set of keys: a reload that changes this is a new generation. */
  const shapeOf = ({ entries }: Keys) => [...entries].map(([kid, entry]) => `${kid}:${entry.retiresAt}`).join(',')
  // After the load: a store whose key is sealed has already refused the start, naming the setting.
  if (sealer === undefined && options.warnWhenUnsealed === true) {
    log.warn('SIGNING_KEY_ENCRYPTION_KEY is not set: the private signing keys are stored in clear (make one with openssl rand -base64 32)')
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

  // Picks up keys added elsewhere, and rotates each kind by age when SIGNING_KEY_ROTATE_AFTER asks for it
  // (JWT_PRIVATE_KEY is not rotated here: only the store's keys are).
  const reloader = runPeriodically(options.reloadIntervalSeconds * 1000, async () => {
    const rotateAfterMs = options.rotateAfterSeconds * 1000
    for (const jwk of [keys.signingJwk, keys.rs256Jwk]) {
      const createdAt = jwk === undefined ? undefined : keys.entries.get(jwk.kid)?.key.createdAt
      if (jwk === undefined || createdAt === undefined || rotateAfterMs <= 0 || clock.now() - createdAt.getTime() < rotateAfterMs) continue
      await rotateSigningKey(store, { algorithm: jwk.alg === 'RS256' ? 'RS256' : 'EdDSA', sealer, now: currentDate(clock) })
      log.info(`the ${jwk.alg === 'RS256' ? 'RS256' : 'service\'s'} signing key rotated (SIGNING_KEY_ROTATE_AFTER)`)
    }
    await reload()
  }, { onError: (error) => { log.warn({ err: error }, 'signing keys not reloaded') } })

  let makingRs256Key: Promise<void> | undefined
  /** The newest RS256 key, stored first when the store has none (another instance may have stored it: read first). */
  async function rs256Key (): Promise<SigningJwk> {
    if (keys.rs256Jwk === undefined) {
      makingRs256Key ??= (async () => {
        await reload()
        if (keys.rs256Jwk !== undefined) return
        await storeFirstSigningKey(store, { kind: 'RS256', sealer, now: currentDate(clock) })
        await reload()
        // A reload begun before the key was stored may have been the one awaited: read once more.
        if (keys.rs256Jwk === undefined) await reload()
      })().finally(() => { makingRs256Key = undefined })
      await makingRs256Key
    }
    if (keys.rs256Jwk === undefined) throw new Error('the store has no RS256 signing key after storing one')
    return keys.rs256Jwk
  }

  function publishedAt (now: number): PublicJwk[] {
    return [...keys.entries.values()].filter(entry => entry.publishedUntil > now).map(entry => entry.key.publicJwk)
  }

  /** The provider's keys as last given, and what they were made from: the same object until the kids change. */
  let providerKeysMade: { from: Keys, until: number, kids: string, value: ProviderKeys } | undefined
  async function providerKeys (): Promise<ProviderKeys> {
    const rs256 = await rs256Key()
    const now = clock.now()
    if (providerKeysMade?.from === keys && now < providerKeysMade.until) return providerKeysMade.value
    const signingKids = new Set([keys.signingJwk.kid, rs256.kid])
    const retired = [...keys.entries.values()].filter(entry => entry.publishedUntil > now && !signingKids.has(entry.key.kid))
    const kids = [...signingKids, ...retired.map(entry => entry.key.kid)].join(' ')
    providerKeysMade = {
      from: keys,
      // Looked at again once the first of the retired keys is no longer published.
      until: Math.min(...retired.map(entry => entry.publishedUntil)),
      kids,
      // A reload that changed nothing keeps the object: the provider is built again only for new keys.
      value: providerKeysMade?.kids === kids ? providerKeysMade.value : { service: keys.signingJwk, rs256, retired: retired.map(entry => entry.key.publicJwk) }
    }
    return providerKeysMade.value
  }

  /** Only the service's keys verify access tokens: an RS256 key signs ID tokens alone. */
  const verifiesAccessTokens = (entry: KeyEntry | undefined) => entry !== undefined && kindOf(entry.key.algorithm) === 'service' ? entry : undefined

  return {
    signAccessToken: (payload) => keys.signer.sign(payload),
    signStatusList: (payload) => keys.statusListSigner(payload),
    async keyFor (kid) {
      const known = keys.entries.get(kid)
      if (known !== undefined || configuredKey !== undefined) return verifiesAccessTokens(known)
      // Requests arriving during a reload wait for it; after it, another unknown kid waits for the gap to pass.
      if (reloading === undefined) {
        if (clock.now() - lastKidReloadAt < UNKNOWN_KID_RELOAD_GAP_MS) return undefined
        lastKidReloadAt = clock.now()
      }
      await reload()
      return verifiesAccessTokens(keys.entries.get(kid))
    },
    providerKeys,
    get generation () {
      return generation
    },
    get jwks () {
      return { keys: publishedAt(clock.now()) }
    },
    async publishedJwks () {
      // Without it (the store cannot be written), the keys in memory still verify all that was signed.
      await rs256Key().catch((error: unknown) => { log.warn({ err: error }, 'no RS256 signing key stored') })
      return { keys: publishedAt(clock.now()) }
    },
    reload,
    async close () {
      await reloader.stop()
      await makingRs256Key?.catch(() => undefined)
    }
  }
}
