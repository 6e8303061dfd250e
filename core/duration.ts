const UNIT_SECONDS = { s: 1, m: 60, h: 3600, d: 86400 } as const

/** A duration setting: a whole number of seconds (`900`) or with a unit (`90s`, `15m`, `12h`, `30d`). */
export const DURATION_PATTERN = '^[0-9]+(s|m|h|d)?$'

/** Parses a duration setting into whole seconds; throws on anything else. */
export function parseDurationSeconds (value: string): number {
  const match = new RegExp(DURATION_PATTERN).exec(value.trim())
  if (match === null) throw new Error(`"${value}" is not a duration such as 900, 15m or 30d`)
  const unit = (match[1] ?? 's') as keyof typeof UNIT_SECONDS
  return Number.parseInt(value, 10) * UNIT_SECONDS[unit]
}

/** A short duration setting in milliseconds: `50ms`, `1s` (PASSWORD_HASH_TARGET). */
export const MILLISECONDS_PATTERN = '^[0-9]+(ms|s)$'

/** Parses a short duration setting (`50ms`, `1s`) into whole milliseconds; throws on anything else. */
export function parseDurationMilliseconds (value: string): number {
  const match = new RegExp(MILLISECONDS_PATTERN).exec(value.trim())
  if (match === null) throw new Error(`"${value}" is not a duration such as 50ms or 1s`)
  return Number.parseInt(value, 10) * (match[1] === 's' ? 1000 : 1)
}
