import neostandard from 'neostandard'

export default neostandard({
  ts: true,
  ignores: ['dist/**', 'build/**', '.sea-cache/**', 'coverage/**', '.tap/**', 'db/sqlite/migrations/**', 'db/postgres/migrations/**']
})
