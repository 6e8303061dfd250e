import { defineConfig } from 'drizzle-kit'

// Generates the PostgreSQL migrations that the service applies at start (`npm run db:generate`).
export default defineConfig({
  dialect: 'postgresql',
  schema: './db/postgres/schema.ts',
  out: './db/postgres/migrations'
})
