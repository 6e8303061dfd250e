// Builds the single executable (Node single executable application) from dist/:
// one CommonJS bundle (esbuild) with the assets it reads at run time, injected
// into a copy of the pinned Node 24 LTS (postject), not of the Node running this
// script: see scripts/node-runtime.mjs. Run by `npm run build:sea` after `npm run build`.
import { execFileSync } from 'node:child_process'
import { copyFileSync, mkdirSync, readdirSync, readFileSync, realpathSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { dirname, join, relative, sep } from 'node:path'
import { fileURLToPath } from 'node:url'
import { build } from 'esbuild'
import { inject } from 'postject'
import { NODE_VERSION, prepareRuntime } from './node-runtime.mjs'

const root = fileURLToPath(new URL('..', import.meta.url))
const nodeFlags = () => JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).config.nodeFlags.split(' ')
const out = join(root, 'build')
const executable = join(out, 'account-service')
const toPosix = (path) => path.split(sep).join('/')
// The embedded Node, and better-sqlite3's addon compiled for it (cached after the first build).
const runtime = prepareRuntime()

// Files the code reads at run time, by the path it reads them at (relative to the package root, as in dist/).
const assets = {
  'better_sqlite3.node': runtime.betterSqlite3.addon,
  // N-API: one build loads on every Node version.
  'argon2.node': join(root, 'node_modules/@node-rs/argon2-linux-x64-gnu/argon2.linux-x64-gnu.node'),
  // The hashing threads load bcryptjs (imported bcrypt hashes) by path too: its CommonJS build, one file.
  'bcryptjs.js': join(root, 'node_modules/bcryptjs/umd/index.js')
}
function addFolder (folder, key) {
  for (const name of readdirSync(folder)) {
    const path = join(folder, name)
    if (statSync(path).isDirectory()) addFolder(path, `${key}/${name}`)
    else assets[`${key}/${name}`] = path
  }
}
addFolder(join(root, 'dist/db/sqlite/migrations'), 'db/sqlite/migrations')
addFolder(join(root, 'dist/db/postgres/migrations'), 'db/postgres/migrations')
addFolder(join(root, 'dist/routes/pages/public'), 'routes/pages/public')
addFolder(join(root, 'node_modules/@fastify/swagger-ui/static'), 'node_modules/@fastify/swagger-ui/static')
// The console's QR code drawer (routes/pages/index.ts resolves the package, then reads its qrcode.mjs).
for (const file of ['package.json', 'dist/qrcode.js', 'dist/qrcode.mjs']) {
  assets[`node_modules/qrcode-generator/${file}`] = join(root, 'node_modules/qrcode-generator', file)
}

// dist is a link to the current build (scripts/build.mjs); esbuild sees the build's real paths.
const distRoot = realpathSync(join(root, 'dist'))
const inDist = new RegExp(`^${distRoot.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}[\\\\/].*\\.js$`)

const seaPaths = {
  name: 'sea-paths',
  setup (build) {
    // Our modules find their files next to themselves: point import.meta.url into the assets folder.
    build.onLoad({ filter: inDist }, ({ path }) => ({
      contents: readFileSync(path, 'utf8')
        // The hashing threads load argon2 by path: give them the addon written out from the assets.
        .replace("createRequire(import.meta.url).resolve('@node-rs/argon2')", "require('node:path').join(__seaRoot, 'argon2.node')")
        .replace("createRequire(import.meta.url).resolve('bcryptjs')", "require('node:path').join(__seaRoot, 'bcryptjs.js')")
        .replaceAll('import.meta.url', `__seaUrl(${JSON.stringify(toPosix(relative(distRoot, path)))})`),
      loader: 'js'
    }))
    // Swagger UI serves its files from its own folder.
    build.onLoad({ filter: /[\\/]@fastify[\\/]swagger-ui[\\/](index|lib[\\/]routes)\.js$/ }, ({ path }) => ({
      contents: readFileSync(path, 'utf8').replaceAll('__dirname', `require('node:path').join(__seaRoot, ${JSON.stringify(toPosix(relative(root, dirname(path))))})`),
      loader: 'js'
    }))
    // Native addons: better-sqlite3 finds its addon through `bindings`, argon2 through its platform package.
    build.onResolve({ filter: /^bindings$/ }, () => ({ path: 'better_sqlite3.node', namespace: 'sea-addon' }))
    build.onResolve({ filter: /^@node-rs\/argon2-linux-x64-gnu$|argon2\.linux-x64-gnu\.node$/ }, () => ({ path: 'argon2.node', namespace: 'sea-addon' }))
    build.onLoad({ filter: /.*/, namespace: 'sea-addon' }, ({ path }) => ({
      contents: path === 'better_sqlite3.node'
        ? `module.exports = () => __seaAddon(${JSON.stringify(path)})`
        : `module.exports = __seaAddon(${JSON.stringify(path)})`,
      loader: 'js'
    }))
  }
}

rmSync(out, { recursive: true, force: true })
mkdirSync(out, { recursive: true })
const bundle = join(out, 'bundle.cjs')
await build({
  // With arguments it is the admin CLI (`account-service users list`), without them the service.
  stdin: {
    contents: `import { start } from './dist/src/start.js'
import { runAdmin } from './dist/src/admin.js'
const args = process.argv.slice(2)
if (args.length === 0) start()
else runAdmin(args).then(code => { process.exitCode = code })
`,
    resolveDir: root,
    loader: 'js'
  },
  bundle: true,
  platform: 'node',
  format: 'cjs',
  target: `node${NODE_VERSION}`,
  outfile: bundle,
  banner: { js: readFileSync(join(root, 'scripts/sea-prelude.cjs'), 'utf8') },
  plugins: [seaPaths],
  logLevel: 'warning'
})

const manifest = join(out, 'manifest.json')
writeFileSync(manifest, JSON.stringify(Object.keys(assets)))
const config = join(out, 'sea-config.json')
const blob = join(out, 'sea-prep.blob')
writeFileSync(config, JSON.stringify({
  main: bundle,
  output: blob,
  disableExperimentalSEAWarning: true,
  // The V8 flags `npm start` gives the service (package.json's config.nodeFlags), given to the executable's Node.
  // (--max-semi-space-size=8 and --v8-pool-size=2: the resident memory they save is in docs/deploy.md, "V8's flags".)
  execArgv: nodeFlags(),
  assets: { 'manifest.json': manifest, ...assets }
}))
// The blob must come from the very Node binary it is injected into.
execFileSync(runtime.node, ['--experimental-sea-config', config], { stdio: 'inherit' })
copyFileSync(runtime.node, executable)
await inject(executable, 'NODE_SEA_BLOB', readFileSync(blob), { sentinelFuse: 'NODE_SEA_FUSE_fce680ab2cc467b6e072b8b5df1996b2' })
rmSync(blob)
console.log(`built ${relative(root, executable)} (${Math.round(statSync(executable).size / 1e6)} MB, Node v${NODE_VERSION})`)
