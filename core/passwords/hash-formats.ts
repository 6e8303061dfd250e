/*
 * The password hashes the service verifies: its own Argon2id, and the foreign forms an import brings
 * (docs/accounts.md, "Imported password hashes"): bcrypt's modular crypt form, Argon2 (id, i, d) and
 * scrypt and PBKDF2 as PHC strings. Parsing is strict: a string that is not exactly one of these forms
 * is no hash (a login against it fails as a wrong password does; an import skips its line).
 */

export type Pbkdf2Digest = 'sha1' | 'sha256' | 'sha512'

/** A parsed hash: what the hashing thread is asked to check (core/passwords/hashing-pool.ts). */
export type ParsedHash =
  | { family: 'argon2', variant: 'argon2id' | 'argon2i' | 'argon2d', memoryCost: number, timeCost: number, parallelism: number }
  | { family: 'bcrypt', cost: number }
  | { family: 'scrypt', N: number, r: number, p: number, salt: Buffer, hash: Buffer }
  | { family: 'pbkdf2', digest: Pbkdf2Digest, iterations: number, salt: Buffer, hash: Buffer }

/**
 * The most an imported hash may cost to verify: each about a second or less of one core here (a
 * 2-core test host: bcrypt 13 ≈ 1 s in bcryptjs, PBKDF2-SHA256 1M ≈ 0.3 s, scrypt ln=16 r=8 ≈ 0.65 s
 * and 64 MiB), and so that no login can take gigabytes. Above them an import refuses the hash.
 */
export const IMPORT_HASH_LIMITS = {
  bcryptCost: 13,
  /** Iterations times the blocks the derived key takes (a key longer than the digest costs a run per block). */
  pbkdf2Work: { sha1: 2_000_000, sha256: 3_000_000, sha512: 1_300_000 } satisfies Record<Pbkdf2Digest, number>,
  /** 128·N·r bytes. */
  scryptMemoryBytes: 64 * 1024 * 1024,
  /** N·r·p: passlib's default (ln=16, r=8, p=1) and no more. */
  scryptWork: 2 ** 19,
  /** KiB. */
  argon2Memory: 262_144,
  /** m·t, KiB × passes: e.g. 64 MiB and 16 passes, or 256 MiB and 4. */
  argon2Work: 1_048_576,
  argon2Parallelism: 16
} as const

/** The memory a scrypt check may take (node:crypto's maxmem): the cap, and room for its p blocks. */
export const SCRYPT_MAX_MEMORY = IMPORT_HASH_LIMITS.scryptMemoryBytes + 16 * 1024 * 1024

const DIGEST_BYTES: Record<Pbkdf2Digest, number> = { sha1: 20, sha256: 32, sha512: 64 }

/** A hash or salt in a PHC string: standard base64 without padding (PHC), with it, or passlib's `.` for `+`. */
const B64 = /^[A-Za-z0-9+/.]+={0,2}$/
function decodeB64 (text: string): Buffer | undefined {
  if (!B64.test(text)) return undefined
  const bare = text.replace(/=+$/, '').replaceAll('.', '+')
  if (bare.length % 4 === 1) return undefined
  const bytes = Buffer.from(bare, 'base64')
  // Node decodes leniently: the length tells whether every character was read.
  return bytes.length === Math.floor(bare.length * 3 / 4) ? bytes : undefined
}

/** A decimal integer without sign or leading zero, at most 10 digits. */
function integer (text: string | undefined): number | undefined {
  return text !== undefined && /^(0|[1-9][0-9]{0,9})$/.test(text) ? Number(text) : undefined
}

const BCRYPT = /^\$2[aby]\$([0-9]{2})\$[./A-Za-z0-9]{53}$/
const ARGON2 = /^\$(argon2id|argon2i|argon2d)\$(?:v=(16|19)\$)?m=([0-9]+),t=([0-9]+),p=([0-9]+)\$([A-Za-z0-9+/]+)\$([A-Za-z0-9+/]+)$/
const SCRYPT = /^\$scrypt\$ln=([0-9]+),r=([0-9]+),p=([0-9]+)\$([^$]+)\$([^$]+)$/
// PHC (`i=` and an optional `l=`) or passlib's bare rounds.
const PBKDF2 = /^\$pbkdf2-(sha1|sha256|sha512)\$(?:i=([0-9]+)(?:,l=([0-9]+))?|([0-9]+))\$([^$]+)\$([^$]+)$/

/** The hash's family and parameters, or why it is none of the forms the service verifies. */
export function parseHash (passwordHash: string): ParsedHash | { invalid: string } {
  if (passwordHash.length > 1024) return { invalid: 'password_hash is too long' }
  let match = BCRYPT.exec(passwordHash)
  if (match !== null) {
    const cost = Number(match[1])
    return cost >= 4 && cost <= 31 ? { family: 'bcrypt', cost } : { invalid: 'bcrypt cost out of range' }
  }
  match = ARGON2.exec(passwordHash)
  if (match !== null) {
    const [memoryCost, timeCost, parallelism] = [match[3], match[4], match[5]].map(integer)
    const salt = decodeB64(match[6])
    const hash = decodeB64(match[7])
    if (memoryCost === undefined || timeCost === undefined || parallelism === undefined || timeCost < 1 || parallelism < 1 || memoryCost < 8 * parallelism) return { invalid: 'Argon2 parameters out of range' }
    if (salt === undefined || salt.length < 8 || hash === undefined || hash.length < 4) return { invalid: 'Argon2 salt or hash malformed' }
    return { family: 'argon2', variant: match[1] as 'argon2id', memoryCost, timeCost, parallelism }
  }
  match = SCRYPT.exec(passwordHash)
  if (match !== null) {
    const [ln, r, p] = [match[1], match[2], match[3]].map(integer)
    if (ln === undefined || r === undefined || p === undefined || ln < 1 || ln > 31 || r < 1 || p < 1) return { invalid: 'scrypt parameters out of range' }
    const salt = decodeB64(match[4])
    const hash = decodeB64(match[5])
    if (salt === undefined || hash === undefined || hash.length < 16 || hash.length > 64) return { invalid: 'scrypt salt or hash malformed' }
    return { family: 'scrypt', N: 2 ** ln, r, p, salt, hash }
  }
  match = PBKDF2.exec(passwordHash)
  if (match !== null) {
    const digest = match[1] as Pbkdf2Digest
    const iterations = integer(match[2] ?? match[4])
    const length = match[3] === undefined ? undefined : integer(match[3])
    const salt = decodeB64(match[5])
    const hash = decodeB64(match[6])
    if (iterations === undefined || iterations < 1) return { invalid: 'PBKDF2 iterations out of range' }
    if (salt === undefined || hash === undefined || hash.length < 16 || hash.length > 64 || (length !== undefined && length !== hash.length)) return { invalid: 'PBKDF2 salt or hash malformed' }
    return { family: 'pbkdf2', digest, iterations, salt, hash }
  }
  return { invalid: 'unknown password_hash format (bcrypt, Argon2, scrypt or PBKDF2 in PHC form)' }
}

/** Why an import refuses this hash (malformed, or beyond IMPORT_HASH_LIMITS), or undefined when it takes it. */
export function importRefusal (passwordHash: string): string | undefined {
  const parsed = parseHash(passwordHash)
  if ('invalid' in parsed) return parsed.invalid
  const limits = IMPORT_HASH_LIMITS
  switch (parsed.family) {
    case 'bcrypt':
      return parsed.cost > limits.bcryptCost ? `bcrypt cost ${parsed.cost} is above the limit of ${limits.bcryptCost}` : undefined
    case 'argon2': {
      const { memoryCost: m, timeCost: t, parallelism: p } = parsed
      if (m > limits.argon2Memory || m * t > limits.argon2Work || p > limits.argon2Parallelism) {
        return `Argon2 parameters m=${m},t=${t},p=${p} are above the limit (m ≤ ${limits.argon2Memory}, m·t ≤ ${limits.argon2Work}, p ≤ ${limits.argon2Parallelism})`
      }
      return undefined
    }
    case 'scrypt': {
      const { N, r, p } = parsed
      if (128 * N * r > limits.scryptMemoryBytes || N * r * p > limits.scryptWork) {
        return `scrypt parameters ln=${Math.log2(N)},r=${r},p=${p} are above the limit (128·N·r ≤ ${limits.scryptMemoryBytes / 1024 / 1024} MiB, N·r·p ≤ 2^${Math.log2(limits.scryptWork)})`
      }
      return undefined
    }
    case 'pbkdf2': {
      const work = parsed.iterations * Math.ceil(parsed.hash.length / DIGEST_BYTES[parsed.digest])
      const limit = limits.pbkdf2Work[parsed.digest]
      return work > limit ? `PBKDF2-${parsed.digest.toUpperCase()} with ${parsed.iterations} iterations is above the limit of ${limit}` : undefined
    }
  }
}
