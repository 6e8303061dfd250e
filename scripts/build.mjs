// `npm run build` (and so `npm start`): compiles the service into dist/, only when its sources changed,
// and never in place. Each build goes into a folder of its own, .dist/<hash of the inputs>, and dist is a
// symbolic link that is switched to it at the end with one rename(2), which is atomic: a start that runs
// meanwhile, or an instance already running, sees the whole old build or the whole new one, never half of
// one (the old `rm -rf dist && tsc` made two starts from one checkout race, and removed a running
// instance's files under it). Builds started together compute the same hash: whichever finishes first is
// kept, the other is dropped. The newest two builds are kept, so an instance started on the previous one
// still finds its files; older ones are removed.
import { createHash, randomBytes } from 'node:crypto'
import { execFileSync } from 'node:child_process'
import { chmodSync, cpSync, existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, readlinkSync, renameSync, rmSync, statSync, symlinkSync } from 'node:fs'
import { join, relative } from 'node:path'
import { fileURLToPath } from 'node:url'

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

function compile (folder) {
  const tsc = join(root, 'node_modules', 'typescript', 'bin', 'tsc')
  execFileSync(process.execPath, [tsc, '-p', join(root, 'tsconfig.build.json'), '--outDir', folder], { cwd: root, stdio: 'inherit' })
  for (const asset of ASSETS.filter(asset => existsSync(join(root, asset)))) cpSync(join(root, asset), join(folder, asset), { recursive: true })
  chmodSync(join(folder, 'src', 'cli.js'), 0o755)
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
if (current === join('.dist', hash) && existsSync(join(target, 'src', 'server.js'))) {
  console.log(`dist is up to date (${hash})`)
  process.exit(0)
}

mkdirSync(BUILDS, { recursive: true })
if (!existsSync(join(target, 'src', 'server.js'))) {
  const fresh = join(BUILDS, `${hash}.${randomBytes(4).toString('hex')}.partial`)
  try {
    compile(fresh)
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
