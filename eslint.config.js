import neostandard from 'neostandard'

// The floors, bottom to top (docs/architecture.md): db, core, plugins, routes, src. A file may import
// its own floor and the floors below it, never one above: each floor lists the folders it must not reach.
const FLOORS = [
  ['db', ['core', 'plugins', 'routes', 'src']],
  ['core', ['plugins', 'routes', 'src']],
  ['plugins', ['routes', 'src']],
  ['routes', ['src']]
]
const floorRules = FLOORS.map(([floor, above]) => ({
  files: [`${floor}/**/*.ts`],
  rules: {
    'no-restricted-imports': ['error', {
      patterns: above.map(folder => ({
        group: [`**/${folder}/**`, `../${folder}`, `../../${folder}`],
        message: `${floor}/ is below ${folder}/: move what it needs down instead (docs/architecture.md).`
      }))
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
