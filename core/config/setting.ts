import { Type } from '@sinclair/typebox'
import { DURATION_PATTERN, parseDurationSeconds } from '../duration.js'

// What the settings of every concern (core/config/<concern>.ts) are made of.

/** A setting that is missing or malformed; the message names it. */
export class ConfigError extends Error {}

/** A duration setting ("15m", "30d", "0"), with its default. */
export const Duration = (defaultValue: string) => Type.String({ pattern: DURATION_PATTERN, default: defaultValue })

/** A duration setting in seconds, which must be at least one. */
export function atLeastOneSecond (value: string, name: string): number {
  const seconds = parseDurationSeconds(value)
  if (seconds < 1) throw new ConfigError(`Invalid setting: ${name} must be at least 1 second`)
  return seconds
}

export function isOrigin (value: string): boolean {
  try {
    const url = new URL(value)
    return url.origin === value
  } catch {
    return false
  }
}
