// `npm test` (after `pretest`: typecheck, lint, build). One full pass, on Node 24 LTS, and what only
// another runtime or backend can show:
//   1. the whole suite on the Node the single executable embeds (24 LTS; the machine's own Node may be 20,
//      past its end of life), with coverage;
//   2. the PostgreSQL pass (scripts/test-postgres.mjs: the store contract and the races and several
//      instances), on the same Node, where TEST_DATABASE_URL is set; skipped with a message otherwise;
//   3. `npm start` on the machine's own Node (the one `npm start` runs on here): the server test;
//   4. the single executable (`npm run test:sea`).
// better-sqlite3's addon is built for one Node only and the project's node_modules holds the machine
// Node's build, so passes 1 and 2 run in a mirror of the project: its files copied, node_modules
// hard-linked (fast, no extra space) except better-sqlite3, a real folder holding the addon compiled for
// the pinned Node (scripts/node-runtime.mjs). The Node 24 bin folder goes first on PATH: tap, its test
// processes and the servers the tests spawn all run on it. Arguments are passed to tap's first pass.
import { execFileSync } from 'node:child_process'
import { copyFileSync, cpSync, mkdirSync, readdirSync, rmSync } from 'node:fs'
import { delimiter, dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { CACHE, NODE_VERSION, prepareRuntime } from './node-runtime.mjs'
import { POSTGRES_TESTS } from './test-postgres.mjs'

const root = fileURLToPath(new URL('..', import.meta.url))
const started = Date.now()
const elapsed = () => `${Math.round((Date.now() - started) / 1000)} s`

/** A copy of the project whose node_modules loads on `runtime`'s Node. */
function mirrorFor (runtime) {
  const suite = join(CACHE, 'suite')
  // What a run makes or needs not: the caches, the executable, test output. dist is a link into .dist.
  const skip = new Set(['.git', '.sea-cache', 'node_modules', 'build', '.tap', 'coverage', 'data'])
  rmSync(suite, { recursive: true, force: true })
  mkdirSync(suite, { recursive: true })
  for (const entry of readdirSync(root)) {
    if (!skip.has(entry)) cpSync(join(root, entry), join(suite, entry), { recursive: true, verbatimSymlinks: true })
  }
  execFileSync('cp', ['-al', join(root, 'node_modules'), join(suite, 'node_modules')])
  const betterSqlite3 = join(suite, 'node_modules', 'better-sqlite3')
  rmSync(betterSqlite3, { recursive: true })
  for (const entry of ['package.json', 'lib']) cpSync(join(runtime.betterSqlite3.folder, entry), join(betterSqlite3, entry), { recursive: true })
  mkdirSync(join(betterSqlite3, 'build', 'Release'), { recursive: true })
  copyFileSync(runtime.betterSqlite3.addon, join(betterSqlite3, 'build', 'Release', 'better_sqlite3.node'))
  return suite
}

/** Runs a step; a failed step fails the run, and the steps after it still run (one run shows every failure). */
function step (name, run) {
  console.log(`\n== ${name} (at ${elapsed()})`)
  try {
    run()
    console.log(`== ${name}: green (at ${elapsed()})`)
  } catch (error) {
    console.error(`== ${name}: FAILED (${error.status ?? error.message})`)
    process.exitCode = 1
  }
}

const runtime = prepareRuntime()
const suite = mirrorFor(runtime)
// NODE_COMPILE_CACHE: every process of the pass (tap's, the tests', the servers they spawn) reuses the
// compiled code of the modules the others loaded before it, instead of compiling them again.
const node24 = { ...process.env, PATH: `${dirname(runtime.node)}${delimiter}${process.env.PATH}`, NODE_COMPILE_CACHE: join(CACHE, 'compile-cache') }
const tap = join(suite, 'node_modules', '.bin', 'tap')
try {
  step(`the suite on Node ${NODE_VERSION}`, () => execFileSync(tap, process.argv.slice(2), { cwd: suite, env: node24, stdio: 'inherit' }))
  if (process.env.TEST_DATABASE_URL) {
    step('the PostgreSQL pass', () => execFileSync(tap, ['--disable-coverage', ...POSTGRES_TESTS], { cwd: suite, env: { ...node24, TEST_STORE: 'postgres' }, stdio: 'inherit' }))
  } else {
    console.log('\nPostgreSQL suite skipped: TEST_DATABASE_URL not set')
  }
} finally {
  // The mirror is rebuilt by every run; remove it so that nothing else (eslint, editors) trips on it.
  rmSync(suite, { recursive: true, force: true })
}
step(`npm start on this machine's Node ${process.version}`, () => execFileSync(join(root, 'node_modules', '.bin', 'tap'), ['--disable-coverage', 'test/e2e/server.test.ts'], { cwd: root, stdio: 'inherit' }))
step('the single executable', () => execFileSync('npm', ['run', 'test:sea'], { cwd: root, stdio: 'inherit' }))
console.log(`\nnpm test: ${process.exitCode ? 'FAILED' : 'green'} in ${elapsed()}`)
