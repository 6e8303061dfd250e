// The suite's PostgreSQL pass (`npm run test:postgres`, part of `npm test`): the tests whose result
// depends on the store's backend run again with TEST_STORE=postgres against TEST_DATABASE_URL. The rest
// of the suite (HTTP, tokens, pages, settings) talks to the store through the one interface that the
// store tests below hold both backends to, so running it twice proved nothing new and doubled CI.
// Arguments are passed to tap (e.g. one test file of the list).
import { spawnSync } from 'node:child_process'

export const POSTGRES_TESTS = [
  // The store contract: every store method, on this backend (SQLite runs the same files in the main pass),
  // plus PostgreSQL's own: its error mapping, its migrations, its URL handling.
  'test/db/*.test.ts',
  // Several instances over one database: revocation, keys and limits seen across processes.
  'test/e2e/instances.test.ts',
  // Faults and crashes: what a killed process or a failing connection leaves in the database.
  'test/reliability/{crash,mail-outbox,store-faults,webhooks}.test.ts',
  // Races that the database settles (row locks, unique keys, one-statement counters and claims).
  'test/security/{lockout-race,refresh-rotation,mfa-guess-cap,mfa-token-void,account-limits,reset-links}.test.ts',
  // Rules that write several rows in one transaction (proving an address, status indexes, key rotation).
  'test/security/{pre-hijacking,status-list-indexes,signing-keys,revocation}.test.ts',
  'test/plugins/sessions.test.ts',
  // The OAuth / OpenID provider: its models, grants and flows in the store, one instance and two. What a flow adds
  // above the store runs in the main pass only: its pages in Chromium, form_post's page, the POST forms of the
  // authorization and logout endpoints, the public documents' CORS, the RS256 ID tokens, and the relying parties
  // of test/interop/, whose subject is the protocol they speak over the flows these files hold to the store.
  'test/routes/oauth/{backchannel-logout,client-credentials-fast-path,deviations,disabled-user,dpop,instances,organizations-scope,pkce-optional,provider,resource-indicators,retired-keys,userinfo}.test.ts',
  // The admin API: search, disable (sessions revoked in one transaction), the audit trail across users.
  'test/routes/admin/*.test.ts',
  // The CLI's acts are the admin API's (the operator as actor): the same audit rows and webhook rows, in the deletion's transaction.
  'test/security/cli-admin-rules.test.ts',
  // Mailed sign-in codes: racing guesses against the cap, single use, the squatter rule's transaction.
  'test/routes/auth/*.test.ts',
  // Organisations: the last owner kept in the store's transaction (two owners demoting each other at once), invitations single use;
  // the active organisation a session remembers (a column read with the refresh token) and the memberships it reads.
  'test/routes/orgs/*.test.ts',
  // Readiness reports the store's health.
  'test/routes/health.test.ts',
  // GET /users/:id from memory, kept exact across instances by the log.
  'test/routes/user-cache.test.ts'
]

if (process.argv[1] === new URL(import.meta.url).pathname) {
  if (!process.env.TEST_DATABASE_URL) {
    console.log('PostgreSQL suite skipped: TEST_DATABASE_URL not set')
    process.exit(0)
  }
  const files = process.argv.length > 2 ? process.argv.slice(2) : POSTGRES_TESTS
  const { status } = spawnSync('tap', ['--disable-coverage', ...files], {
    env: { ...process.env, TEST_STORE: 'postgres' },
    stdio: 'inherit'
  })
  process.exitCode = status ?? 1
}
