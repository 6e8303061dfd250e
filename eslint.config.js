import neostandard from 'neostandard'

export default neostandard({
  ts: true,
  ignores: ['dist/**', 'build/**', 'coverage/**', '.tap/**', 'db/sqlite/migrations/**', 'db/postgres/migrations/**']
})
