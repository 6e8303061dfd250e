import neostandard from 'neostandard'

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

export default [
  ...neostandard({
    ts: true,
    ignores: ['dist/**', '.dist/**', 'build/**', '.sea-cache/**', 'coverage/**', '.tap/**', 'db/sqlite/migrations/**', 'db/postgres/migrations/**']
  }),
  ...floorRules
]
