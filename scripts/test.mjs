// `npm test` (after `pretest`: typecheck, lint, build). One full pass, on Node 24 LTS, and what only
// another runtime or backend can show:
//   1. the whole suite on the Node the single executable embeds (24 LTS; the machine's own Node may be 20,
//      past its end of life); with coverage where TEST_COVERAGE=1 (`npm run test:coverage`): its
//      instrumentation and each process's report cost the suite about a twelfth of its CPU;
//   2. the PostgreSQL pass (scripts/test-postgres.mjs: the store contract and the races and several
//      instances), on the same Node, where TEST_DATABASE_URL is set; skipped with a message otherwise;
//   3. `npm start` on the machine's own Node (the one `npm start` runs on here): the server test;
//   4. the single executable (`npm run test:sea`).
// Steps 2 to 4 run one after another beside step 1, as a third job: the suite's test processes wait (on
// Chromium, on sockets, on PostgreSQL) for much of their time, and two tap jobs alone left the two cores
// idle for that part. Their output is printed whole when each ends, so that no step's lines interleave.
// better-sqlite3's addon is built for one Node only and the project's node_modules holds the machine
// Node's build, so passes 1 and 2 run in a mirror of the project: its files copied, node_modules
// hard-linked (fast, no extra space) except better-sqlite3, a real folder holding the addon compiled for
// the pinned Node (scripts/node-runtime.mjs). The Node 24 bin folder goes first on PATH: tap, its test
// processes and the servers the tests spawn all run on it. Arguments are passed to tap's first pass.
import { execFileSync, spawn } from 'node:child_process'
import { copyFileSync, cpSync, mkdirSync, readdirSync, realpathSync, rmSync } from 'node:fs'
import { delimiter, dirname, join } from 'node:path'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'
import { CACHE, NODE_VERSION, prepareRuntime } from './node-runtime.mjs'
import { POSTGRES_TESTS } from './test-postgres.mjs'

const root = fileURLToPath(new URL('..', import.meta.url))
const started = Date.now()
const elapsed = () => `${Math.round((Date.now() - started) / 1000)} s`

/** A copy of the project whose node_modules loads on `runtime`'s Node. */
function mirrorFor (runtime, name) {
  const suite = join(CACHE, name)
  // What a run makes or needs not: the caches, the executable, test output. dist is a link into .dist.
  const skip = new Set(['.git', '.sea-cache', 'node_modules', 'build', '.tap', 'coverage', 'data'])
  rmSync(suite, { recursive: true, force: true })
  mkdirSync(suite, { recursive: true })
  for (const entry of readdirSync(root)) {
    if (!skip.has(entry)) cpSync(join(root, entry), join(suite, entry), { recursive: true, verbatimSymlinks: true })
  }
  // The real folder: where node_modules is a link (a git worktree sharing another checkout's), `cp -al` would copy
  // the link, and replacing better-sqlite3 below would replace the other checkout's own.
  execFileSync('cp', ['-al', realpathSync(join(root, 'node_modules')), join(suite, 'node_modules')])
  const betterSqlite3 = join(suite, 'node_modules', 'better-sqlite3')
  rmSync(betterSqlite3, { recursive: true })
  for (const entry of ['package.json', 'lib']) cpSync(join(runtime.betterSqlite3.folder, entry), join(betterSqlite3, entry), { recursive: true })
  mkdirSync(join(betterSqlite3, 'build', 'Release'), { recursive: true })
  copyFileSync(runtime.betterSqlite3.addon, join(betterSqlite3, 'build', 'Release', 'better_sqlite3.node'))
  return suite
}

/** What failed, by step: the TAP lines of each failed test with their diagnostics. */
const failures = []

/**
 * Runs a command as a step, its output passed through as it comes. A failed step fails the run, and the
 * steps after it still run (one run shows every failure). The failed tests' lines are kept and printed
 * again at the end, where a CI log that keeps only its tail still shows them.
 */
async function step (name, command, args, options, { buffered = false } = {}) {
  const begun = `\n== ${name} (at ${elapsed()})`
  const held = []
  const print = buffered ? (line) => held.push(line) : (line) => process.stdout.write(`${line}\n`)
  if (!buffered) console.log(begun)
  const child = spawn(command, args, { ...options, stdio: ['inherit', 'pipe', buffered ? 'pipe' : 'inherit'] })
  if (buffered) child.stderr.on('data', (chunk) => held.push(chunk.toString().trimEnd()))
  const failed = []
  let inFailure = false
  for await (const line of createInterface({ input: child.stdout, crlfDelay: Infinity })) {
    print(line)
    // A failure is its `not ok` line and the diagnostics under it, up to the next result or subtest.
    if (/^\s*not ok \d+/.test(line)) inFailure = true
    else if (/^\s*(ok \d+|# Subtest:)/.test(line)) inFailure = false
    if (inFailure && failed.length < 400) failed.push(line)
  }
  const code = child.exitCode ?? child.signalCode ?? await new Promise(resolve => child.once('close', (exitCode, signal) => resolve(exitCode ?? signal)))
  if (buffered) console.log(`${begun}, printed at its end\n${held.join('\n')}`)
  if (code === 0) {
    console.log(`== ${name}: green (at ${elapsed()})`)
  } else {
    console.error(`== ${name}: FAILED (exit ${code})`)
    failures.push({ name, failed })
    process.exitCode = 1
  }
}

/**
 * tap builds its Test class with the configured plugins (package.json's "tap.plugin") when they differ from the set it
 * was built with; but the runner that notices has already read the old set's loaders, and hands them to every test
 * process of that run. On a fresh clone (npm ci installs the default set, @tapjs/typescript among them) every test
 * process of the first run loaded tap's TypeScript hook beside Node's own type stripping: that run's Node 24 pass took
 * half again as long as the next one. So the set is built here, once, when it differs, before any pass starts and
 * before the mirrors link node_modules.
 */
async function buildTapPlugins () {
  const { TapConfig } = await import('@tapjs/config')
  const { signature } = await import('@tapjs/test')
  if ((await TapConfig.load()).pluginSignature === signature) return
  await step('tap\'s Test class, built with the configured plugins', join(root, 'node_modules', '.bin', 'tap'), ['build'], { cwd: root })
}

await buildTapPlugins()
const runtime = prepareRuntime()
// NODE_COMPILE_CACHE: every process of the pass (tap's, the tests', the servers they spawn) reuses the
// compiled code of the modules the others loaded before it, instead of compiling them again.
const node24 = { ...process.env, PATH: `${dirname(runtime.node)}${delimiter}${process.env.PATH}`, NODE_COMPILE_CACHE: join(CACHE, 'compile-cache') }
// Each pass in a mirror of its own: tap keeps its state (.tap/) in the folder it runs in.
const suite = mirrorFor(runtime, 'suite')
const postgresSuite = process.env.TEST_DATABASE_URL ? mirrorFor(runtime, 'suite-postgres') : undefined

/** The tap of a mirror (its node_modules are the project's, hard-linked). */
const tapOf = (mirror) => join(mirror, 'node_modules', '.bin', 'tap')

/** Steps 2 to 4, one after another, beside the first (see the top of this file). */
async function besideTheSuite () {
  try {
    if (postgresSuite !== undefined) {
      await step('the PostgreSQL pass', tapOf(postgresSuite), ['--disable-coverage', '--jobs', '1', ...POSTGRES_TESTS], { cwd: postgresSuite, env: { ...node24, TEST_STORE: 'postgres' } }, { buffered: true })
    } else {
      console.log('\nPostgreSQL suite skipped: TEST_DATABASE_URL not set')
    }
  } finally {
    if (postgresSuite !== undefined) rmSync(postgresSuite, { recursive: true, force: true })
  }
  await step(`npm start on this machine's Node ${process.version}`, join(root, 'node_modules', '.bin', 'tap'), ['--disable-coverage', 'test/e2e/server.test.ts'], { cwd: root }, { buffered: true })
  await step('the single executable', 'npm', ['run', 'test:sea'], { cwd: root }, { buffered: true })
}

try {
  await Promise.all([
    step(`the suite on Node ${NODE_VERSION}`, tapOf(suite), [...(process.env.TEST_COVERAGE === '1' ? [] : ['--disable-coverage']), ...process.argv.slice(2)], { cwd: suite, env: node24 }),
    besideTheSuite()
  ])
} finally {
  // The mirror is rebuilt by every run; remove it so that nothing else (eslint, editors) trips on it.
  rmSync(suite, { recursive: true, force: true })
}
for (const { name, failed } of failures) {
  console.error(`\n== failed in ${name}:`)
  console.error(failed.length > 0 ? failed.join('\n') : '(no failed test reported: see the step\'s output above)')
}
console.log(`\nnpm test: ${process.exitCode ? 'FAILED' : 'green'} in ${elapsed()}`)
