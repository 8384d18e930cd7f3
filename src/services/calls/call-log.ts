/** The call log: reads and the API view of calls (the call actor writes the rows). */
import { and, eq, gte, inArray, lt, type SQL, sql } from 'drizzle-orm'
import type { Db } from '../../db/client'
import { pgArray, statement } from '../../db/statements'
import { calls } from '../../db/schema'
import { notFound, ValidationError } from '../../errors'
import { keysetPage, type Page, type PageRequest } from '../../pagination'
import { type RecordingRow, recordingsOfCalls, recordingView } from './recordings'

export type CallRow = typeof calls.$inferSelect

const iso = (d: Date | null) => (d ? d.toISOString() : null)

/**
 * The call log record. While the call is in flight (status null) it is the sparse
 * live view: fields known only after the end (ended_at, duration, recording,
 * summary, sentiment) are absent.
 */
export function callView(row: CallRow, recording?: RecordingRow | null) {
  const base = {
    id: row.id,
    object: 'call' as const,
    account: row.accountId,
    direction: row.direction,
    from_number: row.fromNumber,
    from_label: row.fromLabel,
    to_number: row.toNumber,
    user_id: row.userId,
    from_user_id: row.fromUserId,
    to_user_id: row.toUserId,
    status: row.status,
    started_at: row.startedAt.toISOString(),
    ringing_at: iso(row.ringingAt),
    answered_at: iso(row.answeredAt),
    connected_at: iso(row.connectedAt),
    related_call: row.relatedCall,
    simulated: row.simulated,
  }
  if (row.status === null) return base
  return {
    ...base,
    ended_at: iso(row.endedAt),
    duration_seconds: row.durationSeconds,
    recording: recording ? recordingView(recording) : null,
    summary: row.summary,
    sentiment: row.sentiment ?? null,
  }
}

/** A call about to start (its actor is being created): what the call log will show once it has. */
export interface StartingCall {
  call_id: string
  account: string
  mode: CallRow['mode']
  direction: CallRow['direction']
  from_number: string
  from_name?: string | null
  to_number: string
  user_id?: string | null
  from_user_id?: string
  to_user_id?: string
  started_at: string
  simulated: boolean
}

/** The sparse live view of a call nothing has happened to yet. */
export function startingCallView(c: StartingCall) {
  const started = new Date(c.started_at)
  return callView({
    id: c.call_id,
    accountId: c.account,
    mode: c.mode,
    direction: c.direction,
    fromNumber: c.from_number,
    fromLabel: c.from_name ?? null,
    toNumber: c.to_number,
    userId: c.user_id ?? null,
    fromUserId: c.from_user_id ?? null,
    toUserId: c.to_user_id ?? null,
    status: null,
    startedAt: started,
    ringingAt: null,
    answeredAt: null,
    connectedAt: null,
    endedAt: null,
    durationSeconds: null,
    relatedCall: null,
    summary: null,
    sentiment: null,
    simulated: c.simulated,
    endpointIds: [],
    createdAt: started,
    updatedAt: started,
  })
}

/** `from_date`/`to_date`: a date (whole UTC day, to_date inclusive) or a date-time. */
export function parseDateBound(value: string | undefined, field: string, end: boolean): Date | undefined {
  if (value === undefined) return undefined
  const dateOnly = /^\d{4}-\d{2}-\d{2}$/.test(value)
  const t = Date.parse(dateOnly ? `${value}T00:00:00.000Z` : value)
  if (Number.isNaN(t)) throw new ValidationError({ [field]: 'must be a date (YYYY-MM-DD) or an ISO 8601 date-time' })
  return new Date(dateOnly && end ? t + 86_400_000 : t + (end ? 1 : 0))
}

export interface CallFilters {
  user_id?: string
  /** Calls that a device (endpoint) placed or answered. */
  endpoint_id?: string
  direction?: CallRow['direction']
  from_number?: string
  to_number?: string
  status?: string
  from_date?: string
  to_date?: string
}

export function listCalls(db: Db, accountId: string, f: CallFilters, page: PageRequest) {
  const where: (SQL | undefined)[] = [eq(calls.accountId, accountId)]
  if (f.user_id) where.push(eq(calls.userId, f.user_id))
  if (f.endpoint_id) where.push(sql`${calls.endpointIds} @> array[${f.endpoint_id}]::text[]`)
  if (f.direction) where.push(eq(calls.direction, f.direction))
  if (f.from_number) where.push(eq(calls.fromNumber, f.from_number))
  if (f.to_number) where.push(eq(calls.toNumber, f.to_number))
  if (f.status) where.push(eq(calls.status, f.status))
  const from = parseDateBound(f.from_date, 'from_date', false)
  const to = parseDateBound(f.to_date, 'to_date', true)
  if (from) where.push(gte(calls.startedAt, from))
  if (to) where.push(lt(calls.startedAt, to))
  return keysetPage<CallRow>(db, calls, and(...where), page)
}

/** A page of the call log as the API shows it: ended calls with their recording. */
export async function callLogPage(db: Db, accountId: string, f: CallFilters, page: PageRequest): Promise<Page<ReturnType<typeof callView>>> {
  const rows = await listCalls(db, accountId, f, page)
  const recs = await recordingsOfCalls(
    db,
    accountId,
    rows.rows.filter((r) => r.status !== null).map((r) => r.id),
  )
  return { ...rows, rows: rows.rows.map((row) => callView(row, recs.get(row.id) ?? null)) }
}

export async function getCall(db: Db, accountId: string, id: string): Promise<CallRow> {
  const [row] = await db
    .select()
    .from(calls)
    .where(and(eq(calls.accountId, accountId), eq(calls.id, id)))
  if (!row) throw notFound('call', id)
  return row
}

export async function callsByIds(db: Db, accountId: string, ids: string[]): Promise<Map<string, CallRow>> {
  if (ids.length === 0) return new Map()
  const rows = await db
    .select()
    .from(calls)
    .where(and(eq(calls.accountId, accountId), inArray(calls.id, ids)))
  return new Map(rows.map((r) => [r.id, r]))
}

// ---------------------------------------------------------------- writing the log (the call actor's projection)

/** A new call's row: written by its first event (call.initiated or call.incoming). */
export type CallLogInsert = Pick<
  CallRow,
  'id' | 'accountId' | 'mode' | 'direction' | 'fromNumber' | 'fromLabel' | 'toNumber' | 'userId' | 'fromUserId' | 'toUserId' | 'relatedCall' | 'simulated'
> & { startedAt: Date; updatedAt: Date /** the device that placed the call, when a phone did. */; fromEndpoint?: string }

/**
 * A change to a call's row: each field given is set; `firstRing` sets ringing_at and
 * the rung user only when the call has not rung before (the first of several users).
 */
export interface CallLogPatch {
  id: string
  updatedAt: Date
  /** userId is absent when the far end of a call to a number rang. */
  firstRing?: { at: Date; userId?: string }
  answeredAt?: Date
  connectedAt?: Date
  /** A device the call reached (the phone that answered): added to the call's endpoints once. */
  endpoint?: string
  endedAt?: Date
  status?: NonNullable<CallRow['status']>
  durationSeconds?: number
  userId?: string
  toUserId?: string
  relatedCall?: string
  /** the AI text about the call (an AI agent's call, at its end). */
  summary?: string
}

const iso8601 = (d: Date | undefined) => d?.toISOString()

const INSERT_CALL_LOGS = statement(
  `insert into calls (id, account_id, mode, direction, from_number, from_label, to_number, user_id, from_user_id, to_user_id,
      status, started_at, related_call, simulated, endpoint_ids, created_at, updated_at)
    select id, account_id, mode, direction, from_number, from_label, to_number, user_id, from_user_id, to_user_id,
      null, started_at, related_call, simulated, case when from_endpoint is null then '{}'::text[] else array[from_endpoint] end,
      started_at, updated_at
    from jsonb_to_recordset($1::jsonb) as x(id text, account_id text, mode text, direction text, from_number text,
      from_label text, to_number text, user_id text, from_user_id text, to_user_id text, started_at timestamptz, related_call text,
      simulated boolean, from_endpoint text, updated_at timestamptz)
    on conflict (id) do nothing`,
)

/**
 * `c.id = any($2)` (the same ids as an array) lets the planner read the rows by
 * primary key: from jsonb_to_recordset alone it expects 100 rows and, on a table of
 * a few thousand calls, hashed them against a scan of the whole table (4 ms a batch,
 * growing with the table; `npm run bench -- calls`).
 */
const PATCH_CALL_LOGS = statement(
  `update calls as c set
      ringing_at = coalesce(c.ringing_at, x.ring_at),
      user_id = coalesce(x.user_id, case when c.ringing_at is null then x.ring_user end, c.user_id),
      answered_at = coalesce(x.answered_at, c.answered_at),
      connected_at = coalesce(x.connected_at, c.connected_at),
      ended_at = coalesce(x.ended_at, c.ended_at),
      status = coalesce(x.status, c.status),
      duration_seconds = coalesce(x.duration_seconds, c.duration_seconds),
      to_user_id = coalesce(x.to_user_id, c.to_user_id),
      related_call = coalesce(x.related_call, c.related_call),
      summary = coalesce(x.summary, c.summary),
      endpoint_ids = case when x.endpoint is null or x.endpoint = any(c.endpoint_ids) then c.endpoint_ids else c.endpoint_ids || x.endpoint end,
      updated_at = x.updated_at
    from jsonb_to_recordset($1::jsonb) as x(id text, ring_at timestamptz, ring_user text, answered_at timestamptz,
      connected_at timestamptz, ended_at timestamptz, status text, duration_seconds integer, user_id text, to_user_id text,
      related_call text, summary text, endpoint text, updated_at timestamptz)
    where c.id = x.id and c.id = any($2::text[])`,
)

/** New calls' rows, in one statement (a call already logged keeps its row). */
export async function insertCallLogs(tx: Db, rows: CallLogInsert[]): Promise<void> {
  if (rows.length === 0) return
  const json = rows.map((r) => ({
    id: r.id,
    account_id: r.accountId,
    mode: r.mode,
    direction: r.direction,
    from_number: r.fromNumber,
    from_label: r.fromLabel,
    to_number: r.toNumber,
    user_id: r.userId,
    from_user_id: r.fromUserId,
    to_user_id: r.toUserId,
    started_at: r.startedAt.toISOString(),
    related_call: r.relatedCall,
    simulated: r.simulated,
    from_endpoint: r.fromEndpoint,
    updated_at: r.updatedAt.toISOString(),
  }))
  await INSERT_CALL_LOGS.rows(tx, [JSON.stringify(json)])
}

/** Changes to calls' rows, in one statement; several changes to one call merge in order (the first ring stays the first). */
export async function patchCallLogs(tx: Db, patches: CallLogPatch[]): Promise<void> {
  if (patches.length === 0) return
  const merged = new Map<string, CallLogPatch>()
  for (const p of patches) {
    const before = merged.get(p.id)
    const defined = Object.fromEntries(Object.entries(p).filter(([, v]) => v !== undefined)) as CallLogPatch
    merged.set(p.id, before ? { ...before, ...defined, firstRing: before.firstRing ?? p.firstRing } : p)
  }
  const json = [...merged.values()].map((p) => ({
    id: p.id,
    ring_at: iso8601(p.firstRing?.at),
    ring_user: p.firstRing?.userId,
    answered_at: iso8601(p.answeredAt),
    connected_at: iso8601(p.connectedAt),
    ended_at: iso8601(p.endedAt),
    status: p.status,
    duration_seconds: p.durationSeconds,
    user_id: p.userId,
    to_user_id: p.toUserId,
    related_call: p.relatedCall,
    summary: p.summary,
    endpoint: p.endpoint,
    updated_at: p.updatedAt.toISOString(),
  }))
  await PATCH_CALL_LOGS.rows(tx, [JSON.stringify(json), pgArray(json.map((r) => r.id))])
}
