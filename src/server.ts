import module from 'node:module'
import { fileURLToPath } from 'node:url'

// `npm start` runs this file; src/start.ts does the work.
// Node 22.1+ can keep the compiled code of the modules on disk, so that later starts skip
// compiling them (bench/results/notes.md has the start times). Kept beside the build (a new build gets its own, and
// writable only by whoever installed the service), not in the shared temporary folder.
// Node 20 has no such cache: feature-detected, and the start goes on without it.
const withCache = module as { enableCompileCache?: (directory: string) => unknown }
withCache.enableCompileCache?.(fileURLToPath(new URL('../.compile-cache', import.meta.url)))
// Imported only now, so that the cache covers start.ts and everything it loads.
const { start } = await import('./start.js')
await start()
