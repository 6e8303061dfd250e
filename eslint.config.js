import neostandard from 'neostandard'
import noFolderLoop from './scripts/lint/no-folder-loop.mjs'

// The floors, bottom to top (docs/architecture.md): db, core, plugins, routes, src. A file may import
// its own floor and the floors below it, never one above: each floor lists the folders it must not reach.
const FLOORS = [
  ['db', ['core', 'plugins', 'routes', 'src']],
  ['core', ['plugins', 'routes', 'src']],
  ['plugins', ['routes', 'src']],
  ['routes', ['src']]
]
// The store and the rules know nothing of HTTP: Fastify and its plugins are for plugins/ and above
// (@fastify/error only defines error classes with a code and a status, which the rules throw).
const HTTP_PACKAGES = { group: ['fastify', 'fastify-plugin', '@fastify/*', '!@fastify/error'], message: 'db/ and core/ know nothing of Fastify: take what is needed as a plain value or type.' }
const floorRules = FLOORS.map(([floor, above]) => ({
  files: [`${floor}/**/*.ts`],
  rules: {
    'no-restricted-imports': ['error', {
      patterns: [
        ...above.map(folder => ({
          group: [`**/${folder}/**`, `../${folder}`, `../../${folder}`],
          message: `${floor}/ is below ${folder}/: move what it needs down instead (docs/architecture.md).`
        })),
        ...(above.includes('plugins') ? [HTTP_PACKAGES] : [])
      ]
    }]
  }
}))

// Inside a floor, folders may import each other, but never in a loop (core/schemas/ importing a type
// of core/mfa/ while core/mfa/ reaches core/schemas/ through core/sessions/ and core/tokens/, say): what
// both need moves to or below the lower one. A file straight under a floor counts as a folder of its own.
const folderLoopRule = {
  files: [...FLOORS.map(([floor]) => `${floor}/**/*.ts`), 'src/**/*.ts'],
  plugins: { floors: { rules: { 'no-folder-loop': noFolderLoop } } },
  rules: {
    'floors/no-folder-loop': 'error'
  }
}

export default [
  ...neostandard({
    ts: true,
    ignores: ['dist/**', '.dist/**', 'build/**', '.sea-cache/**', 'coverage/**', '.tap/**', 'db/sqlite/migrations/**', 'db/postgres/migrations/**']
  }),
  ...floorRules,
  folderLoopRule
]
