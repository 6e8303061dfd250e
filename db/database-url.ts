// What a DATABASE_URL names, decided in one place (the store's opening, the settings' check, the logs):
// `postgres://` and `postgresql://` URLs name PostgreSQL; anything else is a SQLite file, a `file:` URL or `:memory:`.

export function isPostgresUrl (databaseUrl: string): boolean {
  return /^postgres(ql)?:\/\//.test(databaseUrl)
}

/**
 * DATABASE_URL as it may be logged or shown in an error: a PostgreSQL URL without its user, password and
 * options (host, port and database stay, to say which server); a SQLite path as it is.
 */
export function describeDatabase (databaseUrl: string): string {
  if (!isPostgresUrl(databaseUrl) || !URL.canParse(databaseUrl)) return isPostgresUrl(databaseUrl) ? 'postgres://(an unreadable URL)' : databaseUrl
  const url = new URL(databaseUrl)
  return `${url.protocol}//${url.host}${url.pathname}`
}
