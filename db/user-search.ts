/** The LIKE pattern of an admin search: the query anywhere, lower-cased, its own % _ and \ taken literally (ESCAPE '\'). */
export function containsPattern (query: string): string {
  return `%${query.toLowerCase().replace(/[\\%_]/g, (character) => `\\${character}`)}%`
}
