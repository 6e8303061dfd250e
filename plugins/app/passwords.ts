import type { Algorithm } from '@node-rs/argon2'
import fp from 'fastify-plugin'
import { createHashingPool } from '../../src/passwords/hashing-pool.js'

declare module 'fastify' {
  interface FastifyInstance {
    passwords: Passwords
  }
}

export interface Passwords {
  hash (password: string): Promise<string>
  /** True when `password` matches `passwordHash`; a malformed hash is a mismatch, never a crash. */
  verify (passwordHash: string, password: string): Promise<boolean>
  /** Spends the time of one verification against no user, so that an unknown email answers as slowly as a wrong password. Always false. */
  verifyNothing (password: string): Promise<false>
  /** True when the stored hash was made with other parameters than today's (it is then rehashed at the next login). */
  needsRehash (passwordHash: string): boolean
}

/** Argon2id with OWASP's minimum parameters (19 MiB, 2 passes, 1 lane). */
export const ARGON2ID_OPTIONS = {
  // Algorithm is a const enum the package does not export at run time; 2 is its Argon2id.
  algorithm: 2 as Algorithm.Argon2id,
  memoryCost: 19456,
  timeCost: 2,
  parallelism: 1
}

/** The PHC string prefix our parameters produce: `$argon2id$v=19$m=19456,t=2,p=1$`. */
const CURRENT_PARAMETERS = `$argon2id$v=19$m=${ARGON2ID_OPTIONS.memoryCost},t=${ARGON2ID_OPTIONS.timeCost},p=${ARGON2ID_OPTIONS.parallelism}$`

/** Hashing runs off the event loop, on one low-priority thread per core (src/passwords/hashing-pool.ts). */
export default fp(async (fastify) => {
  const pool = createHashingPool()
  fastify.addHook('onClose', () => pool.close())
  const hash = async (password: string) => await pool.run({ op: 'hash', password, options: ARGON2ID_OPTIONS }) as string

  // A real hash of a random secret: verifying against it costs what a real verification costs.
  const dummyHash = await hash(crypto.randomUUID())

  const passwords: Passwords = {
    hash,
    async verify (passwordHash, password) {
      try {
        return await pool.run({ op: 'verify', passwordHash, password }) === true
      } catch {
        return false
      }
    },
    async verifyNothing (password) {
      await passwords.verify(dummyHash, password)
      return false
    },
    needsRehash: (passwordHash) => !passwordHash.startsWith(CURRENT_PARAMETERS)
  }
  fastify.decorate('passwords', passwords)
}, { name: 'passwords' })
