import type { Algorithm } from '@node-rs/argon2'
import type { SettingsStore } from '../../db/store.js'
import type { Logger } from '../logger.js'
import { createHashingPool, type Argon2Parameters, type HashingPool } from './hashing-pool.js'
import { OWASP_MINIMUM, phcPrefix, sharedParameters } from './parameters.js'

export interface Passwords {
  hash (password: string): Promise<string>
  /** True when `password` matches `passwordHash`; a malformed hash is a mismatch, never a crash. Throws 503 BUSY when the queue is full. */
  verify (passwordHash: string, password: string): Promise<boolean>
  /** Spends the time of one verification against no user, so that an unknown email answers as slowly as a wrong password. Always false. */
  verifyNothing (password: string): Promise<false>
  /** True when the stored hash was made with other parameters than the stored (calibrated) ones: it is then rehashed at the next login. */
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
  const dummyHash = await hash(crypto.randomUUID())

  const passwords: ClosablePasswords = {
    hash,
    async verify (passwordHash, password) {
      try {
        return await pool.run({ op: 'verify', passwordHash, password }) === true
      } catch (error) {
        // A full queue is not a wrong password: the client is told to retry (503 BUSY).
        if ((error as { code?: string }).code === 'BUSY') throw error
        return false
      }
    },
    async verifyNothing (password) {
      await passwords.verify(dummyHash, password)
      return false
    },
    needsRehash: (passwordHash) => !passwordHash.startsWith(current),
    close: () => pool.close()
  }
  return passwords
}
