import { defineConfig } from 'drizzle-kit'

// `npm run db:generate` writes a new migration from the schema; migrations are committed.
export default defineConfig({
  dialect: 'postgresql',
  schema: './src/db/schema/index.ts',
  out: './src/db/migrations',
})
