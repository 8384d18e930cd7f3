/**
 * Hot-path queries without drizzle's query building. drizzle builds every query anew
 * from its parts, and on this runtime that costs more than the round trip itself:
 * measured on PostgreSQL (2 cores, 16 in flight), a select through the builder took
 * 242 µs of client CPU, the same as a sql template over a precomputed column list
 * 103 µs, as fixed text 60 µs. So the statements that run for nearly every request or
 * actor step are written once, here or with these helpers, and drizzle keeps the rest.
 *
 * Values go in and come out as they do through `db.execute(sql...)`: parameters are
 * strings, numbers, booleans or null (timestamps as ISO strings, jsonb as JSON text
 * cast with ::jsonb), and timestamps come back as strings (drizzle's parsers).
 */
import { getTableColumns, getTableName, type SQL, sql } from 'drizzle-orm'
import { type PgColumn, PgDialect, type PgTable } from 'drizzle-orm/pg-core'
import { type Db, queryRows } from './client'

export type Param = string | number | boolean | null

type PostgresJsClient = { unsafe(text: string, params: Param[], options: { prepare: boolean }): Promise<unknown[]> }
type PgliteClient = { query(text: string, params: Param[]): Promise<{ rows: unknown[] }> }

/** The driver under a drizzle handle: the pool, or the transaction's own connection inside one. */
function driverOf(db: Db): PostgresJsClient | PgliteClient {
  return (db as unknown as { session: { client: PostgresJsClient | PgliteClient } }).session.client
}

/** A PostgreSQL array literal (text elements quoted), to pass a whole array as one parameter. */
export const pgArray = (values: readonly (string | number)[]) =>
  `{${values.map((v) => (typeof v === 'number' ? String(v) : `"${v.replace(/["\\]/g, '\\$&')}"`)).join(',')}}`

export interface Statement<Row> {
  readonly text: string
  rows(db: Db, params: Param[]): Promise<Row[]>
}

/** Runs text with $1..$n as a prepared statement (PostgreSQL keeps it per connection, by text). */
async function run<Row>(db: Db, text: string, params: Param[]): Promise<Row[]> {
  const client = driverOf(db)
  if ('unsafe' in client) return (await client.unsafe(text, params, { prepare: true })) as Row[]
  return (await client.query(text, params)).rows as Row[]
}

/** A statement written once as text with $1..$n; PostgreSQL keeps it prepared per connection. */
export function statement<Row = Record<string, unknown>>(text: string): Statement<Row> {
  return { text, rows: (db, params) => run<Row>(db, text, params) }
}

const dialect = new PgDialect()

/**
 * A drizzle condition (eq, and, ilike...) as text with $1..$n and its parameters,
 * mapped to driver values as drizzle's own query would send them: the callers'
 * filters stay drizzle expressions, and the statement around them is written as text.
 */
export function renderCondition(condition: SQL): { text: string; params: Param[] } {
  const q = dialect.sqlToQuery(condition)
  return { text: q.sql, params: q.params as Param[] }
}

/** An identifier quoted for statement text (a column or table name). */
export const quoteIdent = (name: string) => `"${name.replaceAll('"', '""')}"`

interface TableReader<Row> {
  /** Every column, quoted and comma-separated, built once. */
  columnList: string
  /** `select <every column> from <table>`, as text and as SQL. */
  selectText: string
  select: SQL
  /** A row as the driver gave it, keyed by column name, as drizzle's select would give it. */
  fromRow(raw: Record<string, unknown>): Row
}

const readers = new WeakMap<PgTable, TableReader<unknown>>()

function readerOf<T extends PgTable>(table: T): TableReader<T['$inferSelect']> {
  let reader = readers.get(table)
  if (!reader) {
    const columns = Object.entries(getTableColumns(table)) as [string, PgColumn][]
    const columnList = columns.map(([, c]) => quoteIdent(c.name)).join(', ')
    const selectText = `select ${columnList} from ${quoteIdent(getTableName(table))}`
    reader = {
      columnList,
      selectText,
      select: sql.raw(selectText),
      fromRow(raw) {
        const row: Record<string, unknown> = {}
        for (const [key, column] of columns) {
          const value = raw[column.name]
          row[key] = value === null || value === undefined ? null : column.mapFromDriverValue(value)
        }
        return row
      },
    }
    readers.set(table, reader)
  }
  return reader as TableReader<T['$inferSelect']>
}

/**
 * Whole rows of `table`, typed as drizzle's `select().from(table)` would give them:
 * `rest` is everything after the from clause (where, order by, limit, for update).
 */
export async function selectRows<T extends PgTable>(db: Db, table: T, rest: SQL): Promise<T['$inferSelect'][]> {
  const reader = readerOf(table)
  const raw = await queryRows<Record<string, unknown>>(db, sql`${reader.select} ${rest}`)
  return raw.map((r) => reader.fromRow(r))
}

/**
 * Whole rows of `table` as `selectRows` gives them, from a statement written as text:
 * `rest` (with $1..$n for `params`) follows `select <every column> from <table>`.
 */
export async function selectRowsText<T extends PgTable>(db: Db, table: T, rest: string, params: Param[]): Promise<T['$inferSelect'][]> {
  const reader = readerOf(table)
  return (await run<Record<string, unknown>>(db, `${reader.selectText} ${rest}`, params)).map((r) => reader.fromRow(r))
}

/**
 * A fixed statement answering whole rows of `table` (its text gets the quoted column
 * list to put after `returning` or `select`), typed and mapped as drizzle's own
 * select would give them.
 */
export function tableStatement<T extends PgTable>(table: T, text: (columns: string) => string): Statement<T['$inferSelect']> {
  const reader = readerOf(table)
  const inner = statement<Record<string, unknown>>(text(reader.columnList))
  return {
    text: inner.text,
    async rows(db, params) {
      return (await inner.rows(db, params)).map((r) => reader.fromRow(r))
    },
  }
}

/**
 * Waits for statements sent together on one transaction (pipelined: none waits for
 * another's answer), every one of them, and throws the error of the first to fail in
 * the order they were sent: the later ones only found the transaction aborted
 * (`current transaction is aborted`), and their rejections may well settle first.
 * Nothing is left running on a transaction about to be rolled back.
 */
export async function settleInOrder(statements: Promise<unknown>[]): Promise<void> {
  const failed = (await Promise.allSettled(statements)).find((r) => r.status === 'rejected')
  if (failed) throw failed.reason
}
