import { execFileSync } from 'node:child_process'
import { cpSync, mkdirSync, readFileSync, symlinkSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import type { AccountStore } from '../db/store.js'
import type { newClient } from '../core/oauth/clients.js'

/*
 * What a benchmark runs: this tree's build (`change`), and with BENCH_BASE another commit's (`main`,
 * say) built beside it, so that the two are measured in one run, alternating, on one machine state.
 * Each build seeds its stores with its own code: its migrations, its OAuth client records.
 */

/** The code of a build that writes a store as that build would. */
export interface StoreCode {
  openSqliteStore (filename: string): AccountStore
  newClient: typeof newClient
}

export interface Build {
  /** `change` for this tree; the ref and commit for the base, e.g. `main (d3a2300)`. */
  label: string
  /** The service's entry point, as `npm start` runs it. */
  entry: string
  storeCode (): Promise<StoreCode>
}

const root = fileURLToPath(new URL('..', import.meta.url))

/**
 * The base's node_modules: this checkout's where the lockfiles agree (a link), else its own, from its
 * lockfile and npm's cache, without install scripts: better-sqlite3's addon, compiled for the same
 * version and Node here, is copied in rather than compiled again (minutes of this machine's two cores).
 */
function installDependencies (folder: string, log: (line: string) => void): void {
  const lockfile = (at: string) => readFileSync(join(at, 'package-lock.json'), 'utf8')
  if (lockfile(folder) === lockfile(root)) {
    symlinkSync(join(root, 'node_modules'), join(folder, 'node_modules'))
    return
  }
  log('the base has other dependencies: installing them from its lockfile')
  execFileSync('npm', ['ci', '--ignore-scripts', '--prefer-offline', '--no-audit', '--no-fund'], { cwd: folder, stdio: ['ignore', 'ignore', 'inherit'] })
  const addon = (at: string) => join(at, 'node_modules', 'better-sqlite3')
  const version = (at: string) => (JSON.parse(readFileSync(join(addon(at), 'package.json'), 'utf8')) as { version: string }).version
  if (version(folder) !== version(root)) throw new Error(`the base has better-sqlite3 ${version(folder)}, this checkout ${version(root)}: install the base by hand`)
  cpSync(join(addon(root), 'build'), join(addon(folder), 'build'), { recursive: true })
}

/** This tree, built by `npm run bench`'s `npm run build` into dist/. */
export const changeBuild: Build = {
  label: 'change',
  entry: join(root, 'dist', 'src', 'server.js'),
  async storeCode () {
    const [{ openSqliteStore }, { newClient }] = await Promise.all([import('../db/sqlite/store.js'), import('../core/oauth/clients.js')])
    return { openSqliteStore, newClient }
  }
}

/**
 * The commit `ref` as a build of its own: its files exported into `workDir` (git archive: no work
 * tree of ours is touched), its dependencies (installDependencies), compiled by its own build script.
 */
export function prepareBaseBuild (ref: string, workDir: string, log: (line: string) => void): Build {
  const commit = execFileSync('git', ['rev-parse', '--short', `${ref}^{commit}`], { cwd: root, encoding: 'utf8' }).trim()
  const folder = join(workDir, `base-${commit}`)
  mkdirSync(folder, { recursive: true })
  log(`building the base ${ref} (${commit}) in ${folder}`)
  execFileSync('sh', ['-c', `git archive ${commit} | tar -x -C '${folder}'`], { cwd: root, stdio: ['ignore', 'ignore', 'inherit'] })
  installDependencies(folder, log)
  execFileSync(process.execPath, [join(folder, 'scripts', 'build.mjs')], { cwd: folder, stdio: ['ignore', 'ignore', 'inherit'] })
  const dist = join(folder, 'dist')
  return {
    label: `${ref} (${commit})`,
    entry: join(dist, 'src', 'server.js'),
    async storeCode () {
      const [{ openSqliteStore }, { newClient }] = await Promise.all([
        import(pathToFileURL(join(dist, 'db', 'sqlite', 'store.js')).href) as Promise<Pick<StoreCode, 'openSqliteStore'>>,
        import(pathToFileURL(join(dist, 'core', 'oauth', 'clients.js')).href) as Promise<Pick<StoreCode, 'newClient'>>
      ])
      return { openSqliteStore, newClient }
    }
  }
}
