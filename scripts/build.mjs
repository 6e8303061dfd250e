// `npm run build` (and so `npm start`): compiles the service into dist/, only when its sources changed,
// and bundles what `npm start` loads (dist/start/, see bundleStart), so that it starts in well under a second,
// and never in place. Each build goes into a folder of its own, .dist/<hash of the inputs>, and dist is a
// symbolic link that is switched to it at the end with one rename(2), which is atomic: a start that runs
// meanwhile, or an instance already running, sees the whole old build or the whole new one, never half of
// one (the old `rm -rf dist && tsc` made two starts from one checkout race, and removed a running
// instance's files under it). Builds started together compute the same hash: whichever finishes first is
// kept, the other is dropped. The newest two builds are kept, so an instance started on the previous one
// still finds its files; older ones are removed.
import { createHash, randomBytes } from 'node:crypto'
import { execFileSync } from 'node:child_process'
import { chmodSync, cpSync, existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, readlinkSync, renameSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs'
import { dirname, join, relative } from 'node:path'
import { fileURLToPath } from 'node:url'
import { build } from 'esbuild'

const root = fileURLToPath(new URL('..', import.meta.url))
const BUILDS = join(root, '.dist')
const DIST = join(root, 'dist')
const SOURCE_FOLDERS = ['src', 'core', 'plugins', 'routes', 'db']
const INPUT_FILES = ['package.json', 'package-lock.json', 'tsconfig.json', 'tsconfig.build.json', 'scripts/build.mjs']
/** What the compiled code reads beside itself at run time, copied as it is. */
const ASSETS = ['db/sqlite/migrations', 'db/postgres/migrations', 'routes/pages/public']
const KEPT_BUILDS = 2

function filesUnder (folder) {
  if (!existsSync(join(root, folder))) return []
  return readdirSync(join(root, folder), { recursive: true, withFileTypes: true })
    .filter(entry => entry.isFile())
    .map(entry => relative(root, join(entry.parentPath ?? entry.path, entry.name)))
}

/** A hash of every input of the build: paths and contents, in a stable order. */
function inputsHash () {
  const hash = createHash('sha256')
  const files = [...SOURCE_FOLDERS.flatMap(filesUnder), ...ASSETS.flatMap(filesUnder), ...INPUT_FILES.filter(file => existsSync(join(root, file)))].sort()
  for (const file of files) hash.update(`${file}\0`).update(readFileSync(join(root, file))).update('\0')
  return hash.digest('hex').slice(0, 16)
}

/**
 * Packages the start bundle leaves to Node: native addons, and what loads only when a setting or a
 * first request asks for it (each a chunk of its own would be as lazy, but these are large, read
 * files beside themselves, or are never used by a server: the dev pretty-printer).
 */
const NOT_BUNDLED = [
  'better-sqlite3', '@node-rs/argon2', 'bcryptjs', 'pino-pretty',
  'oidc-provider', 'openid-client', '@simplewebauthn/server', 'pg', 'ioredis', 'nodemailer',
  '@fastify/swagger', '@fastify/swagger-ui', '@fastify/static'
]

/**
 * What `npm start` loads, as one ES module and the chunks of its dynamic imports (esbuild, code
 * splitting): Node 20 resolved and read some 900 files at every start, a second of the start
 * (issue 23); one file loads in a fraction of that. Our modules find their files beside
 * themselves (migrations, pages), so each one's import.meta.url becomes its own file's in dist/.
 * The compiled files stay for the CLI and for whatever imports them; the bundle is only the server's.
 */
async function bundleStart (folder) {
  const outdir = join(folder, 'start')
  const ownModule = new RegExp(`^${folder.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}[\\/].*\\.js$`)
  await build({
    entryPoints: [join(folder, 'src', 'start.js')],
    outdir,
    bundle: true,
    splitting: true,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    external: NOT_BUNDLED,
    // The CommonJS packages inside call require() for Node's own modules.
    banner: { js: "import { createRequire as __bundleRequire } from 'node:module'; const require = __bundleRequire(import.meta.url);" },
    sourcemap: 'linked',
    logLevel: 'warning',
    plugins: [{
      name: 'own-module-urls',
      setup (bundler) {
        bundler.onLoad({ filter: ownModule }, ({ path }) => ({
          contents: readFileSync(path, 'utf8').replaceAll('import.meta.url',
            `new URL(${JSON.stringify(relative(outdir, path).split('\\').join('/'))}, import.meta.url).href`),
          loader: 'js',
          resolveDir: dirname(path)
        }))
      }
    }]
  })
  for (const file of readdirSync(outdir).filter(name => name.endsWith('.js'))) latin1Only(join(outdir, file))
}

/**
 * V8 keeps each script's source for as long as its functions live (it compiles them lazily), in one
 * byte a character when every character is Latin-1 and in two otherwise: five dashes in a dependency's
 * comments doubled the 3 MB bundle to 5.9 MB of heap. esbuild's output escapes everything else beyond
 * ASCII (its default charset), so what is left is in comments, and is written as an escape there too.
 */
function latin1Only (file) {
  const source = readFileSync(file, 'utf8')
  const escaped = source.replace(/[\u0100-\u{10ffff}]/gu, (character) => `\\u{${character.codePointAt(0).toString(16)}}`)
  if (escaped !== source) writeFileSync(file, escaped)
}

async function compile (folder) {
  const tsc = join(root, 'node_modules', 'typescript', 'bin', 'tsc')
  execFileSync(process.execPath, [tsc, '-p', join(root, 'tsconfig.build.json'), '--outDir', folder], { cwd: root, stdio: 'inherit' })
  for (const asset of ASSETS.filter(asset => existsSync(join(root, asset)))) cpSync(join(root, asset), join(folder, asset), { recursive: true })
  chmodSync(join(folder, 'src', 'cli.js'), 0o755)
  await bundleStart(folder)
}

/** Points dist at the build `name` with one rename over the old link. */
function switchDist (name) {
  if (existsSync(DIST) && !lstatSync(DIST).isSymbolicLink()) {
    // A dist/ folder from before builds were switched by a link: set aside, then removed.
    const aside = join(BUILDS, `old-${randomBytes(4).toString('hex')}`)
    renameSync(DIST, aside)
    rmSync(aside, { recursive: true, force: true })
  }
  const link = join(root, `dist.${randomBytes(4).toString('hex')}`)
  symlinkSync(join('.dist', name), link)
  renameSync(link, DIST)
}

function removeOldBuilds (current) {
  const builds = readdirSync(BUILDS)
    .filter(name => /^[0-9a-f]{16}$/.test(name) && name !== current)
    .map(name => ({ name, time: statSync(join(BUILDS, name)).mtimeMs }))
    .sort((a, b) => b.time - a.time)
  for (const { name } of builds.slice(KEPT_BUILDS - 1)) rmSync(join(BUILDS, name), { recursive: true, force: true })
}

const hash = inputsHash()
const target = join(BUILDS, hash)
const current = existsSync(DIST) && lstatSync(DIST).isSymbolicLink() ? readlinkSync(DIST) : undefined
if (current === join('.dist', hash) && existsSync(join(target, 'start', 'start.js'))) {
  console.log(`dist is up to date (${hash})`)
  process.exit(0)
}

mkdirSync(BUILDS, { recursive: true })
if (!existsSync(join(target, 'start', 'start.js'))) {
  const fresh = join(BUILDS, `${hash}.${randomBytes(4).toString('hex')}.partial`)
  try {
    await compile(fresh)
    try {
      renameSync(fresh, target)
    } catch (error) {
      // Another build of the same inputs finished first: its output is the same, keep it.
      if (error.code !== 'ENOTEMPTY' && error.code !== 'EEXIST') throw error
    }
  } finally {
    rmSync(fresh, { recursive: true, force: true })
  }
}
switchDist(hash)
removeOldBuilds(hash)
console.log(`dist is built (${hash})`)
