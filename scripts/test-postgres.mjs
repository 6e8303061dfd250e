// The suite's PostgreSQL pass (`npm run test:postgres`, part of `npm test`): every test file whose
// outcome can depend on the store runs again with TEST_STORE=postgres against TEST_DATABASE_URL.
// The files below cannot: they open no store, or (the browser tests) check what a page's script
// does, while the routes those pages call run on PostgreSQL in test/routes. Leaving them out keeps
// the pass, and CI, shorter. Arguments are passed to tap (e.g. one test file).
import { spawnSync } from 'node:child_process'

const BACKEND_NEUTRAL = [
  // Browser tests of the pages (Chromium).
  'test/e2e/{pages,console-mfa,console-oidc,cors,oidc-browser,passkeys}.test.ts',
  // The single executable embeds SQLite only; npm run test:sea runs it.
  'test/e2e/sea.test.ts',
  // No store at all: settings, pure units, the bench harness.
  'test/{config-webauthn,oidc-config}.test.ts',
  'test/bench/harness.test.ts',
  'test/db/rotation-batch.test.ts',
  'test/plugins/{hashing-pool,login-throttle,openapi,outbox-worker}.test.ts',
  'test/security/{file-modes,logs,production-settings}.test.ts',
  'test/sessions/touch-throttle.test.ts'
]

if (!process.env.TEST_DATABASE_URL) {
  console.log('PostgreSQL suite skipped: TEST_DATABASE_URL not set')
  process.exit(0)
}
const excluded = BACKEND_NEUTRAL.map(pattern => `--exclude=${pattern}`)
const { status } = spawnSync('tap', ['--disable-coverage', ...excluded, ...process.argv.slice(2)], {
  env: { ...process.env, TEST_STORE: 'postgres' },
  stdio: 'inherit'
})
process.exitCode = status ?? 1
