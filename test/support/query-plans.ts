/**
 * A statement's plan as PostgreSQL (or PGlite) reports it, for tests that check how a
 * hot statement reaches its rows: EXPLAIN (FORMAT JSON) with the statement's own
 * parameters, as JSON text (both drivers answer one row of one column, parsed or not).
 */
import type { Db } from '../../src/db/client'
import { statement } from '../../src/db/statements'

/** `options`: EXPLAIN's options besides FORMAT JSON, such as 'analyze, buffers'. */
export async function planJson(db: Db, text: string, params: string[], options = ''): Promise<string> {
  const [row] = await statement<Record<string, unknown>>(`explain (${options ? `${options}, ` : ''}format json) ${text}`).rows(db, params)
  return JSON.stringify(Object.values(row!)[0])
}
