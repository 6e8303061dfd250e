// The suite's second pass, on the Node the single executable embeds (`npm run test:node24`,
// part of `npm test`). better-sqlite3's addon is built for one Node only, and the project's
// node_modules holds the machine Node's build, so the pass runs in a mirror of the project:
// its own files copied, node_modules hard-linked (fast, no extra space) except better-sqlite3,
// which is a real folder holding the addon compiled for the pinned Node (scripts/node-runtime.mjs).
// The Node 24 bin folder goes first on PATH: tap, its test processes and the servers the
// tests spawn all run on it. Arguments are passed to tap (e.g. one test file).
import { execFileSync } from 'node:child_process'
import { copyFileSync, cpSync, mkdirSync, readdirSync, rmSync } from 'node:fs'
import { delimiter, dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { CACHE, prepareRuntime } from './node-runtime.mjs'

const root = fileURLToPath(new URL('..', import.meta.url))
const runtime = prepareRuntime()
const suite = join(CACHE, 'suite')

// What a run makes or needs not: the caches, the executable, test output.
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

const env = { ...process.env, PATH: `${dirname(runtime.node)}${delimiter}${process.env.PATH}` }
const run = (command, args) => execFileSync(command, args, { cwd: suite, env, stdio: 'inherit' })
process.stdout.write('Node 24 pass: node --version ')
run('node', ['--version'])
try {
  run(join(suite, 'node_modules', '.bin', 'tap'), ['--disable-coverage', ...process.argv.slice(2)])
} catch (error) {
  process.exitCode = error.status ?? 1
}
if (process.exitCode) console.error('Node 24 pass: failed')
else console.log(`Node 24 pass: green on ${execFileSync(runtime.node, ['--version'], { encoding: 'utf8' }).trim()}`)
// The mirror is rebuilt by every run; remove it so that nothing else (eslint, editors) trips on it.
rmSync(suite, { recursive: true, force: true })
