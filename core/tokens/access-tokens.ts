import { createSigner, createVerifier } from 'fast-jwt'
import fp from 'fastify-plugin'
import { InvalidTokenError, TokenExpiredError } from '../errors.js'
import { createSealer } from '../secrets/sealing.js'
import { configuredSigningKey, loadStoredKeys, rotateSigningKey, storeFirstSigningKey, type PublicKeyDescription } from './keys.js'

declare module 'fastify' {
  interface FastifyInstance {
    accessTokens: AccessTokens
  }
}

/** What a verified access token says: whose it is and which session issued it. */
export interface AccessTokenClaims {
  userId: number
  sessionId: string
  /** The Token Status List claim (plugins/app/status-list.ts), carried as signed so a re-signed token keeps it. */
  status?: object
}

export interface AccessTokens {
  /** Signs with the newest key; `status` is the Token Status List claim (plugins/app/status-list.ts). */
  sign (claims: AccessTokenClaims): string
  /** Signs a Token Status List (typ statuslist+jwt) with the newest key; the payload carries its own iat and exp. */
  signStatusList (payload: object): string
  /**
   * Throws TOKEN_EXPIRED or INVALID_TOKEN (401). `allowExpired` still demands
   * our signature (by any key we ever had), issuer and audience.
   */
  verify (token: string, options?: { allowExpired?: boolean }): Promise<AccessTokenClaims>
  /** The JSON Web Key Set that other services verify our tokens with: every key that still verifies. */
  readonly jwks: { keys: Array<PublicKeyDescription['publicJwk']> }
  /** Reads the keys from the store again (a key added by another instance or the admin command). */
  reloadKeys (): Promise<void>
}

export interface TokensOptions {
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

interface AccessTokenPayload {
  sub: string
  sid: string
  iat: number
  exp: number
  status?: object
}

/** The contract allows at most 1 s: a token from the future by more than this is refused; exp gets none. */
const CLOCK_LEEWAY_MS = 1000
/** A token naming an unknown kid reads the store again at most this often (forged kids must not flood it). */
const UNKNOWN_KID_RELOAD_GAP_MS = 1000

/** One key, ready to sign and verify; kept across reloads so that its verifier cache lives on. */
interface KeyEntry {
  key: PublicKeyDescription & { createdAt?: Date }
  /** Signature, algorithm, issuer, audience and required claims; not the time (see entryFor). */
  verify (token: string): AccessTokenPayload
  /** When a successor has signed long enough for every token of this key to have expired; Infinity for the newest. */
  retiresAt: number
}

interface Keyring {
  signer: { kid: string, sign (payload: object): string }
  statusListSigner (payload: object): string
  /** Every key we ever had, by kid. */
  entries: Map<string, KeyEntry>
}

/**
 * Access tokens: asymmetric JWTs (EdDSA by default) signed and verified with
 * fast-jwt, with a `kid` naming the key published in the JWKS. Verification is
 * pinned to the key's algorithm, our issuer and audience, with no leeway on
 * `exp` and 1 s on `iat`. Keys rotate (core/tokens/keys.ts): the newest signs,
 * older ones verify until their last token has expired.
 */
export default fp<TokensOptions>(async (fastify, options) => {
  const { store, clock } = fastify
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
    // against the app's clock below (fast-jwt reads Date.now()), which also lets the header variant's
    // refresh accept an expired token. The cache spares the EdDSA verification when a token comes back.
    return {
      key,
      retiresAt,
      verify: createVerifier({ ...verifierOptions, key: key.publicKeyPem, algorithms: [key.algorithm], ignoreExpiration: true, cache: true }) as KeyEntry['verify']
    }
  }

  async function loadKeyring (previous?: Keyring): Promise<Keyring> {
    let keys: Array<KeyEntry['key'] & { privateKeyPem: string | null }>
    if (configuredKey !== undefined) {
      keys = [configuredKey]
    } else {
      keys = await loadStoredKeys(store, sealer)
      if (keys.length === 0) {
        await storeFirstSigningKey(store, sealer, new Date(clock.now()))
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
    return { signer: { kid: newest.kid, sign }, statusListSigner, entries }
  }

  let keyring = await loadKeyring()
  // After the load: a store whose key is sealed has already refused the start, naming the setting.
  if (configuredKey === undefined && sealer === undefined && options.warnWhenUnsealed === true) {
    fastify.log.warn('SIGNING_KEY_ENCRYPTION_KEY is not set: the private signing key is stored in clear (make one with openssl rand -base64 32)')
  }
  let reloading: Promise<void> | undefined
  let lastKidReloadAt = -Infinity

  function reloadKeys (): Promise<void> {
    reloading ??= loadKeyring(keyring)
      .then((loaded) => { keyring = loaded })
      .finally(() => { reloading = undefined })
    return reloading
  }

  async function entryForKid (kid: string): Promise<KeyEntry | undefined> {
    const known = keyring.entries.get(kid)
    if (known !== undefined || configuredKey !== undefined) return known
    // Requests arriving during a reload wait for it; after it, another unknown kid waits for the gap to pass.
    if (reloading === undefined) {
      if (clock.now() - lastKidReloadAt < UNKNOWN_KID_RELOAD_GAP_MS) return undefined
      lastKidReloadAt = clock.now()
    }
    await reloadKeys()
    return keyring.entries.get(kid)
  }

  const accessTokens: AccessTokens = {
    // iat from the app's clock; fast-jwt adds exp = iat + ACCESS_TOKEN_TTL.
    sign: ({ userId, sessionId, status }) => keyring.signer.sign({ sub: String(userId), sid: sessionId, status, iat: Math.floor(clock.now() / 1000) }),
    signStatusList: (payload) => keyring.statusListSigner(payload),
    async verify (token, { allowExpired = false } = {}) {
      const kid = kidOf(token)
      const entry = kid === undefined ? undefined : await entryForKid(kid)
      // A retired key's tokens have all expired; refusing it also refuses forgeries made with a leaked old key.
      const now = clock.now()
      if (entry === undefined || (!allowExpired && entry.retiresAt <= now)) throw new InvalidTokenError()
      let payload: AccessTokenPayload
      try {
        payload = entry.verify(token)
      } catch {
        throw new InvalidTokenError()
      }
      // A token issued in the future was not issued by us (RFC 8725, 3.10); fast-jwt checks no iat.
      if (typeof payload.iat !== 'number' || payload.iat * 1000 > now + CLOCK_LEEWAY_MS || typeof payload.exp !== 'number') throw new InvalidTokenError()
      if (!allowExpired && now > payload.exp * 1000) throw new TokenExpiredError()
      const userId = Number(payload.sub)
      if (!/^[1-9][0-9]*$/.test(payload.sub) || !Number.isSafeInteger(userId) || typeof payload.sid !== 'string') {
        throw new InvalidTokenError()
      }
      return { userId, sessionId: payload.sid, status: payload.status }
    },
    get jwks () {
      const now = clock.now()
      return { keys: [...keyring.entries.values()].filter(entry => entry.retiresAt > now).map(entry => entry.key.publicJwk) }
    },
    reloadKeys
  }
  fastify.decorate('accessTokens', accessTokens)

  // Picks up keys added elsewhere, and rotates by age when SIGNING_KEY_ROTATE_AFTER asks for it.
  if (configuredKey === undefined) {
    let tick: Promise<void> | undefined
    const timer = setInterval(() => {
      tick ??= (async () => {
        const rotateAfterMs = options.rotateAfterSeconds * 1000
        const createdAt = keyring.entries.get(keyring.signer.kid)?.key.createdAt
        if (rotateAfterMs > 0 && createdAt !== undefined && clock.now() - createdAt.getTime() >= rotateAfterMs) {
          await rotateSigningKey(store, { sealer, now: new Date(clock.now()) })
          fastify.log.info('signing key rotated (SIGNING_KEY_ROTATE_AFTER)')
        }
        await reloadKeys()
      })()
        .catch((error: unknown) => { fastify.log.warn({ err: error }, 'signing keys not reloaded') })
        .finally(() => { tick = undefined })
    }, options.reloadIntervalSeconds * 1000)
    timer.unref()
    fastify.addHook('onClose', async () => {
      clearInterval(timer)
      await tick
    })
  }
}, { name: 'tokens', dependencies: ['store', 'clock'] })

/** The kid of a JWT's header; undefined when the token is not a JWT or names no kid. */
function kidOf (token: string): string | undefined {
  const dot = token.indexOf('.')
  if (dot <= 0) return undefined
  try {
    const header = JSON.parse(Buffer.from(token.slice(0, dot), 'base64url').toString()) as { kid?: unknown }
    return typeof header.kid === 'string' && header.kid !== '' ? header.kid : undefined
  } catch {
    return undefined
  }
}
