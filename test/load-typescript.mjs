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
// compiles them as before.
import { existsSync } from 'node:fs'
import module from 'node:module'
import { fileURLToPath } from 'node:url'

if (process.features.typescript) {
  module.registerHooks({
    resolve (specifier, context, nextResolve) {
      if (specifier.endsWith('.js') && /^(\.{1,2}\/|\/|file:)/.test(specifier) && context.parentURL?.startsWith('file:')) {
        const url = new URL(specifier, context.parentURL)
        if (!existsSync(fileURLToPath(url))) return nextResolve(`${url.href.slice(0, -3)}.ts`, context)
      }
      return nextResolve(specifier, context)
    }
  })
} else {
  await import('@swc-node/register/esm-register')
}
