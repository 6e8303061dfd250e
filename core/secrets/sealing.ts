import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto'

/*
 * Secrets sealed at rest (private signing keys now, TOTP secrets later): AES-256-GCM with a random
 * 96-bit IV per seal and the owner's identifier as associated data, so a sealed value copied onto
 * another row does not open. The text form names its version, so the scheme can change later:
 *   sealed:v1:<base64url of iv (12 bytes) | tag (16 bytes) | ciphertext>
 */

const PREFIX = 'sealed:v1:'
const IV_BYTES = 12
const TAG_BYTES = 16

/** A sealed value that this key cannot open: another key sealed it, or it was altered. */
export class UnsealError extends Error {
  override name = 'UnsealError'
}

export interface Sealer {
  seal (plaintext: string, associatedData: string): string
  /** Throws UnsealError when the value is not sealed, was sealed by another key or for other associated data. */
  open (sealed: string, associatedData: string): string
}

/** Whether a stored value is in the sealed form (any version). */
export function isSealed (value: string): boolean {
  return value.startsWith('sealed:')
}

/** `key`: 32 bytes (SIGNING_KEY_ENCRYPTION_KEY, decoded). */
export function createSealer (key: Buffer): Sealer {
  if (key.length !== 32) throw new RangeError('a sealing key is 32 bytes')
  return {
    seal (plaintext, associatedData) {
      const iv = randomBytes(IV_BYTES)
      const cipher = createCipheriv('aes-256-gcm', key, iv, { authTagLength: TAG_BYTES })
      cipher.setAAD(Buffer.from(associatedData))
      const ciphertext = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()])
      return PREFIX + Buffer.concat([iv, cipher.getAuthTag(), ciphertext]).toString('base64url')
    },
    open (sealed, associatedData) {
      if (!sealed.startsWith(PREFIX)) throw new UnsealError('not a sealed value of version v1')
      const bytes = Buffer.from(sealed.slice(PREFIX.length), 'base64url')
      if (bytes.length < IV_BYTES + TAG_BYTES) throw new UnsealError('sealed value too short')
      const decipher = createDecipheriv('aes-256-gcm', key, bytes.subarray(0, IV_BYTES), { authTagLength: TAG_BYTES })
      decipher.setAAD(Buffer.from(associatedData))
      decipher.setAuthTag(bytes.subarray(IV_BYTES, IV_BYTES + TAG_BYTES))
      try {
        return Buffer.concat([decipher.update(bytes.subarray(IV_BYTES + TAG_BYTES)), decipher.final()]).toString('utf8')
      } catch {
        throw new UnsealError('the sealed value does not open with this key (another key sealed it, or it was altered)')
      }
    }
  }
}
