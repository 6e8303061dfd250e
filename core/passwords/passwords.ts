import type { Algorithm } from '@node-rs/argon2'
import type { SettingsStore } from '../../db/store.js'
import type { Logger } from '../logger.js'
import { parseHash, SCRYPT_MAX_MEMORY } from './hash-formats.js'
import { createHashingPool, type Argon2Parameters, type HashingPool, type HashTask } from './hashing-pool.js'
import { OWASP_MINIMUM, phcPrefix, sharedParameters } from './parameters.js'

export interface Passwords {
  hash (password: string): Promise<string>
  /**
   * True when `password` matches `passwordHash`: the service's Argon2id, or an imported bcrypt, Argon2, scrypt or
   * PBKDF2 hash (core/passwords/hash-formats.ts). A malformed hash is a mismatch, never a crash. Throws 503 BUSY when the queue is full.
   */
  verify (passwordHash: string, password: string): Promise<boolean>
  /** Spends the time of one verification against no user, so that an unknown email answers as slowly as a wrong password. Always false. */
  verifyNothing (password: string): Promise<false>
  /**
   * True when the stored hash was made with other parameters than the stored (calibrated) ones, or is no Argon2id of
   * this service at all (an imported hash): it is then rehashed at the next login.
   */
  needsRehash (passwordHash: string): boolean
}

// Algorithm is a const enum the package does not export at run time; 2 is its Argon2id.
const ARGON2ID = 2 as Algorithm.Argon2id

/** Argon2id with OWASP's minimum parameters (19 MiB, 2 passes, 1 lane): the floor of every calibration. */
export const ARGON2ID_OPTIONS = { algorithm: ARGON2ID, ...OWASP_MINIMUM }

export interface PasswordsOptions {
  /** Hashes that may wait for a thread before new ones are refused with 503 BUSY (PASSWORD_HASH_QUEUE_MAX). */
  queueMax: number
  /** The time one hash should take here (PASSWORD_HASH_TARGET); used only when no parameters are stored yet. */
  hashTargetMs: number
  /**
   * Parameters to hash with instead of the stored (calibrated) ones, below OWASP's minimum if need be:
   * the test suite's, where thousands of hashes would otherwise cost minutes. No setting reaches it; only
   * a program that builds the app itself passes it (src/app.ts, AppOptions.passwordHashParameters).
   */
  fixedParameters?: Argon2Parameters
}

export interface PasswordsDependencies {
  /** Where the Argon2id parameters every instance hashes with are kept. */
  store: SettingsStore
  log: Logger
}

/** The service, and how to end its hashing threads (the plugin calls close() from onClose). */
export interface ClosablePasswords extends Passwords {
  close (): Promise<void>
}

/**
 * Hashing runs off the event loop, on one low-priority thread per core (core/passwords/hashing-pool.ts),
 * with the Argon2id parameters stored for every instance; the first start calibrates them to this host
 * (core/passwords/parameters.ts).
 */
export async function createPasswords ({ store, log }: PasswordsDependencies, { queueMax, hashTargetMs, fixedParameters }: PasswordsOptions): Promise<ClosablePasswords> {
  const pool = createHashingPool({ maxQueued: queueMax })
  try {
    const { parameters, calibration } = fixedParameters === undefined ? await sharedParameters(store, pool, hashTargetMs) : { parameters: fixedParameters }
    if (calibration !== undefined) log.info({ calibration, parameters }, 'password hash parameters calibrated to this host and stored')
    return await startPasswords(pool, parameters)
  } catch (error) {
    // A failed start ends the threads it started: nobody else holds the pool to close it.
    await pool.close()
    throw error
  }
}

async function startPasswords (pool: HashingPool, parameters: Argon2Parameters): Promise<ClosablePasswords> {
  const options = { algorithm: ARGON2ID, ...parameters }
  const current = phcPrefix(parameters)
  const hash = async (password: string) => await pool.run({ op: 'hash', password, options }) as string

  // A real hash of a random secret, with the same parameters: verifying against it costs what a real verification costs.
  // Made while the service starts, not before it is ready (a hash is a tenth of a second of the start); only
  // a login for an unknown account needs it, and waits for it if it comes first.
  const dummyHash = hash(crypto.randomUUID())
  dummyHash.catch(() => {}) // a pool closed meanwhile: verifyNothing's verify says false, as for any failure

  const passwords: ClosablePasswords = {
    hash,
    async verify (passwordHash, password) {
      const task = verification(passwordHash, password)
      if (task === undefined) return false
      try {
        return await pool.run(task) === true
      } catch (error) {
        // A full queue is not a wrong password: the client is told to retry (503 BUSY).
        if ((error as { code?: string }).code === 'BUSY') throw error
        return false
      }
    },
    async verifyNothing (password) {
      await passwords.verify(await dummyHash.catch(() => ''), password)
      return false
    },
    needsRehash: (passwordHash) => !passwordHash.startsWith(current),
    close: () => pool.close()
  }
  return passwords
}

/** The hashing thread's check of `password` against a hash of any form the service verifies; undefined for no hash at all. */
function verification (passwordHash: string, password: string): HashTask | undefined {
  const parsed = parseHash(passwordHash)
  if ('invalid' in parsed) return undefined
  switch (parsed.family) {
    case 'argon2': return { op: 'verify', passwordHash, password }
    case 'bcrypt': return { op: 'bcrypt', passwordHash, password }
    case 'scrypt': return { op: 'scrypt', password, salt: parsed.salt, hash: parsed.hash, N: parsed.N, r: parsed.r, p: parsed.p, maxmem: SCRYPT_MAX_MEMORY }
    case 'pbkdf2': return { op: 'pbkdf2', password, salt: parsed.salt, hash: parsed.hash, iterations: parsed.iterations, digest: parsed.digest }
  }
}
