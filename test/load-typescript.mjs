// How the tests load the TypeScript sources (tap's node-arg in package.json).
//
// On Node 24 (the suite's passes) Node strips the types itself: nothing is compiled, positions stay as
// written (no source maps needed), and a test file's process loads the app graph in half the time swc
// took (0.69–0.73 s against 1.33–1.64 s with a warm compile cache, measured here; 193 files a run). tsconfig's
// erasableSyntaxOnly keeps the sources within what stripping takes. The sources import each other as
// `.js`, the files the build emits (TypeScript's NodeNext rule), so a resolve hook turns a relative `.js`
// that does not exist into its `.ts`.
//
// On a Node without type stripping (20: the pass that runs `npm start` on the machine's own Node), swc
// compiles them as before, and only there are source maps turned on (what swc emits needs them to show
// the sources' lines; on Node 24 they only cost every process its dependencies' .map files).
import { existsSync, readFileSync, statSync } from 'node:fs'
import module from 'node:module'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

/**
 * Node 24 tells an imported `.js` file's format from its package's "type", and to read it deserializes
 * that package.json again for every file, exports map and all (Node 20 did not). drizzle-orm's is
 * 179 KB and the app loads some 400 of its files: loading the app graph took 2.04 s of CPU, 1.16 s
 * with this hook (`--cpu-prof` showed it: getPackageScopeConfig). So a relative `.js` import
 * between the files of an ES-module package in node_modules is resolved here: the same file, format
 * "module", its package's "type" read once. Anything else (CommonJS, bare names, the project's own
 * files, a file that is not there) goes to Node as before.
 */
const typeOfFolder = new Map()

/** The "type" of the package.json nearest above `folder`, as Node finds it (each read once). */
function packageType (folder) {
  let type = typeOfFolder.get(folder)
  if (type === undefined) {
    const manifest = join(folder, 'package.json')
    if (existsSync(manifest)) type = JSON.parse(readFileSync(manifest, 'utf8')).type ?? 'commonjs'
    else type = dirname(folder) === folder ? 'commonjs' : packageType(dirname(folder))
    typeOfFolder.set(folder, type)
  }
  return type
}

/** The file a relative `.js` import names inside an ES-module package in node_modules, or undefined. */
function esModuleInPackage (specifier, context) {
  if (!specifier.startsWith('./') && !specifier.startsWith('../')) return undefined
  if (!specifier.endsWith('.js') || !context.parentURL?.startsWith('file:') || !context.parentURL.includes('/node_modules/')) return undefined
  if (!context.conditions?.includes('import')) return undefined
  const url = new URL(specifier, context.parentURL)
  const path = fileURLToPath(url)
  if (!url.pathname.includes('/node_modules/') || !statSync(path, { throwIfNoEntry: false })?.isFile()) return undefined
  return packageType(dirname(path)) === 'module' ? url.href : undefined
}

if (process.features.typescript) {
  // tap starts every test process with --enable-source-maps (@tapjs/run's test-argv.js, not a setting): Node then
  // reads the source map of each module that names one as it loads it, the dependencies' .map files here, none of
  // which a stripped source needs (its positions are as written). Off for what loads after this hook.
  process.setSourceMapsEnabled(false)
  module.registerHooks({
    resolve (specifier, context, nextResolve) {
      const inPackage = esModuleInPackage(specifier, context)
      if (inPackage !== undefined) return { url: inPackage, format: 'module', shortCircuit: true }
      if (specifier.endsWith('.js') && /^(\.{1,2}\/|\/|file:)/.test(specifier) && context.parentURL?.startsWith('file:')) {
        const url = new URL(specifier, context.parentURL)
        if (!existsSync(fileURLToPath(url))) return nextResolve(`${url.href.slice(0, -3)}.ts`, context)
      }
      return nextResolve(specifier, context)
    }
  })
} else {
  process.setSourceMapsEnabled(true)
  await import('@swc-node/register/esm-register')
}
