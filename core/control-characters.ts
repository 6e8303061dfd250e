/*
 * Characters that change what a terminal or a page shows rather than showing themselves: C0 (ESC
 * starts a terminal escape sequence), DEL, C1 (U+009B is a one-character CSI to some terminals),
 * and the bidirectional controls that reorder text ("evil\u202Egpj.exe" reads as "evilexe.jpg").
 * Names refuse them (core/schemas/common.ts); the admin CLI shows any it finds escaped (src/admin.ts).
 */
const CONTROL_RANGES = '\\u0000-\\u001f\\u007f-\\u009f\\u061c\\u200e\\u200f\\u202a-\\u202e\\u2066-\\u2069'

/** A JSON-Schema pattern: no control character anywhere. */
export const NO_CONTROL_CHARACTERS = `^[^${CONTROL_RANGES}]*$`

const CONTROL_CHARACTER = new RegExp(`[${CONTROL_RANGES}]`, 'g')
const CONTROL_BUT_LINE_BREAK = new RegExp(`(?!\\n)[${CONTROL_RANGES}]`, 'g')

const hex = (character: string, digits: number) => character.charCodeAt(0).toString(16).padStart(digits, '0')

/**
 * Text for a terminal: every control character written out visibly, C0, DEL and C1 as `\x1b`,
 * the bidi controls as `\u202e`. With `lineBreaks`, `\n` stays a line break (text the CLI joined
 * into lines itself, whose values were escaped one by one).
 */
export function visible (text: string, { lineBreaks = false } = {}): string {
  return text.replace(lineBreaks ? CONTROL_BUT_LINE_BREAK : CONTROL_CHARACTER,
    character => character.charCodeAt(0) <= 0xff ? `\\x${hex(character, 2)}` : `\\u${hex(character, 4)}`)
}

/**
 * JSON for a terminal: JSON.stringify writes C0 as \u001b already; DEL, C1 and the bidi controls
 * it leaves raw are written as \uXXXX too, which reads back as the same string.
 */
export function visibleJson (value: unknown): string {
  return JSON.stringify(value, null, 2).replace(CONTROL_BUT_LINE_BREAK, character => `\\u${hex(character, 4)}`)
}

/** The text without its control characters: for names that come from elsewhere (a provider's claims), where refusing is not ours to do. */
export function withoutControlCharacters (text: string): string {
  return text.replace(CONTROL_CHARACTER, '')
}
