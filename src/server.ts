import module from 'node:module'
import { fileURLToPath } from 'node:url'

// `npm start` runs this file; src/start.ts does the work, loaded from its bundle (dist/start/, made by
// scripts/build.mjs): one file instead of some 900 for Node to find, read and link.
// Node 22.1+ can keep the compiled code of the modules on disk, so that later starts skip
// compiling them (bench/results/notes.md has the start times). Kept beside the build (a new build gets its own, and
// writable only by whoever installed the service), not in the shared temporary folder.
// Node 20 has no such cache: feature-detected, and the start goes on without it.
const withCache = module as { enableCompileCache?: (directory: string) => unknown }
withCache.enableCompileCache?.(fileURLToPath(new URL('../.compile-cache', import.meta.url)))
// Imported only now, so that the cache covers the bundle and everything it loads.
const bundle = new URL('../start/start.js', import.meta.url).href
const { start } = await import(bundle) as typeof import('./start.js')
await start()
