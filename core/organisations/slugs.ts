import { randomBytes } from 'node:crypto'
import { SLUG_MAX_LENGTH, SLUG_MIN_LENGTH } from '../schemas/organisations.js'

/** Letters of a derived slug's suffix, when the name's own slug is taken. */
const SUFFIX_LENGTH = 4
const SUFFIX_ALPHABET = 'abcdefghijklmnopqrstuvwxyz0123456789'

/**
 * The slug a name gives: accents dropped (é → e), lower case, every run of other characters one '-', none at
 * either end, cut to the maximum; a name that gives fewer than three characters ("Q", "株式会社") is padded with
 * "org" so that every name has one.
 */
export function slugFromName (name: string): string {
  const base = name.normalize('NFKD').replace(/\p{M}/gu, '').toLowerCase()
    .replace(/[^a-z0-9]+/g, '-').replace(/^-+|-+$/g, '').slice(0, SLUG_MAX_LENGTH).replace(/-+$/, '')
  if (base.length >= SLUG_MIN_LENGTH) return base
  return base === '' ? 'org' : `${base}-org`
}

/** The derived slug with a random suffix ("acme-x7k2"), for a name whose own slug another organisation has. */
export function suffixedSlug (slug: string): string {
  const suffix = Array.from(randomBytes(SUFFIX_LENGTH), (byte) => SUFFIX_ALPHABET[byte % SUFFIX_ALPHABET.length]).join('')
  return `${slug.slice(0, SLUG_MAX_LENGTH - SUFFIX_LENGTH - 1).replace(/-+$/, '')}-${suffix}`
}
