import type { Algorithm } from '@node-rs/argon2'
import fp from 'fastify-plugin'
import { createHashingPool } from './hashing-pool.js'
import { OWASP_MINIMUM, phcPrefix, sharedParameters } from './parameters.js'

declare module 'fastify' {
  interface FastifyInstance {
    passwords: Passwords
  }
}

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
}

/**
 * Hashing runs off the event loop, on one low-priority thread per core (core/passwords/hashing-pool.ts),
 * with the Argon2id parameters stored for every instance; the first start calibrates them to this host
 * (core/passwords/parameters.ts).
 */
export default fp<PasswordsOptions>(async (fastify, { queueMax, hashTargetMs }) => {
  const pool = createHashingPool({ maxQueued: queueMax })
  fastify.addHook('onClose', () => pool.close())
  const { parameters, calibration } = await sharedParameters(fastify.store, pool, hashTargetMs)
  if (calibration !== undefined) fastify.log.info({ calibration, parameters }, 'password hash parameters calibrated to this host and stored')
  const options = { algorithm: ARGON2ID, ...parameters }
  const current = phcPrefix(parameters)
  const hash = async (password: string) => await pool.run({ op: 'hash', password, options }) as string

  // A real hash of a random secret, with the same parameters: verifying against it costs what a real verification costs.
  const dummyHash = await hash(crypto.randomUUID())

  const passwords: Passwords = {
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
    needsRehash: (passwordHash) => !passwordHash.startsWith(current)
  }
  fastify.decorate('passwords', passwords)
}, { name: 'passwords', dependencies: ['store'] })
