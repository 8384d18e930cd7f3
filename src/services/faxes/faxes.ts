/**
 * Faxes (spec, "Faxes, Files, Hardware Orders", "Fax", "Fax events", "Limits"): the
 * rules a request checks before a fax's actor hears of it (the document is a PDF
 * file of the account, uploaded with POST /v1/files as a fax_document, its pages
 * counted from the document; the numbers; the per-hour limits of the account config),
 * the rows, and the received faxes of the sandbox. The outbound lifecycle is the
 * actor's machine (machines/fax.ts, actors/faxes/).
 */
import { and, asc, eq, gt, isNull, or, type SQL } from 'drizzle-orm'
import type { Clock } from '../../clock'
import type { Db } from '../../db/client'
import { accounts, type FaxRendering, faxes, files } from '../../db/schema'
import { ApiError, type FieldDetails, notFound } from '../../errors'
import { appendEvents } from '../../events/outbox'
import { newId } from '../../ids'
import { keysetPage, type PageRequest } from '../../pagination'
import { isE164 } from '../../schemas/common'
import type { BlobStorage } from '../../storage/blob-storage'
import { DEFAULT_ACCOUNT_CONFIG } from '../accounts/account-types'
import { type DownloadSigning, signedUrl } from '../media/stored-audio'
import { type FileRow, fileView } from '../media/files'
import { activeNumberOfAccount, firstActiveNumber } from '../numbers/phone-numbers'
import { FAX_RESOLUTION, pdfPageCount, renderFaxTiff } from './documents'

export type FaxRow = typeof faxes.$inferSelect
export type FaxStatusName = FaxRow['status']
export type FaxDirection = FaxRow['direction']
type Mode = 'test' | 'live'

export const newFaxId = () => newId('fax')
const FINAL: FaxStatusName[] = ['delivered', 'failed', 'received']
export const isFinalFax = (s: FaxStatusName) => FINAL.includes(s)

/** Live accounts have no fax carrier in this deployment. */
export function assertFaxCarrier(mode: Mode) {
  if (mode === 'live') throw new ApiError(502, 'No fax carrier is configured for live accounts in this deployment.', 'fax_carrier_unavailable')
}

// ---------------------------------------------------------------- the document

/** A checked fax document: the file, its bytes and its pages. */
export interface FaxDocument {
  file: FileRow
  bytes: Uint8Array
  pages: number
}

/**
 * The file named by `field`, checked: a file of the account, uploaded as a
 * fax_document, a PDF whose page tree gives its pages. Problems go to `problems`
 * under `field` (all of a request's problems are answered together).
 */
export async function faxDocument(db: Db, storage: BlobStorage, accountId: string, fileId: string, field: string, problems: FieldDetails) {
  const [file] = await db
    .select()
    .from(files)
    .where(and(eq(files.id, fileId), eq(files.accountId, accountId)))
  if (!file) {
    problems[field] = 'is not a file of this account: upload the PDF with POST /v1/files (purpose fax_document) and give its id'
    return undefined
  }
  if (file.purpose !== 'fax_document') {
    problems[field] = `was uploaded as ${file.purpose}: a fax document is uploaded with purpose fax_document`
    return undefined
  }
  if (file.contentType !== 'application/pdf') {
    problems[field] = `not_pdf: the document is ${file.contentType}; faxes are sent from a PDF`
    return undefined
  }
  const blob = await storage.get(file.storageKey)
  if (!blob) {
    problems[field] = 'the file’s content is no longer stored; upload it again'
    return undefined
  }
  const pages = await pdfPageCount(blob.bytes)
  if (pages === undefined) {
    problems[field] = 'unreadable_pdf: the PDF’s page tree cannot be read, so its pages cannot be counted'
    return undefined
  }
  return { file, bytes: blob.bytes, pages } satisfies FaxDocument
}

/** The number checked as E.164 (problems under `field`). */
export function checkNumber(value: unknown, field: string, problems: FieldDetails, required = true): string | undefined {
  if (value === undefined || value === null) {
    if (required) problems[field] = 'is required: an E.164 number, e.g. +14155550123'
    return undefined
  }
  if (typeof value !== 'string' || !isE164(value)) {
    problems[field] = 'must be an E.164 number: +, the country code and the number, digits only (e.g. +14155550123)'
    return undefined
  }
  return value
}

/** The account's number a fax goes from (outbound) or to (inbound): the one given (an active number of the account) or the first. */
export async function accountNumber(db: Db, accountId: string, given: string | undefined, field: string, problems: FieldDetails) {
  if (given !== undefined) {
    const row = await activeNumberOfAccount(db, accountId, given)
    if (!row) problems[field] = 'is not an active phone number of this account'
    return row?.number
  }
  const first = await firstActiveNumber(db, accountId)
  if (!first) throw new ApiError(400, 'The account has no active phone number to fax from or to.', 'no_phone_number')
  return first.number
}

// ---------------------------------------------------------------- rendering

/** The document rendered for fax machines (ghostscript, TIFF G3 at 204x196), kept next to the fax; or why not. */
export async function renderFaxDocument(pdf: Uint8Array) {
  return renderFaxTiff(pdf)
}

/**
 * Stores the rendering (inside the request's transaction, after the limits passed) as
 * a file of the account (files row, purpose fax_document, image/tiff: its blob is
 * swept with the account and its download URL checked like any file's), and answers
 * the fax row's `rendering`.
 */
export async function storeRendering(
  tx: Db,
  storage: BlobStorage,
  accountId: string,
  faxId: string,
  r: Awaited<ReturnType<typeof renderFaxTiff>>,
  at: Date,
): Promise<FaxRendering> {
  if (!r.rendered) return { status: 'skipped', reason: r.reason }
  const id = newId('file')
  const key = `files/${accountId}/${id}`
  await tx.insert(files).values({
    id,
    accountId,
    purpose: 'fax_document',
    filename: `${faxId}.tif`,
    contentType: 'image/tiff',
    sizeBytes: r.tiff.length,
    storageKey: key,
    createdAt: at,
  })
  await storage.put(key, r.tiff, 'image/tiff')
  return { status: 'rendered', format: 'tiff_g3', resolution: FAX_RESOLUTION, pages: r.pages, file: id, storage_key: key, size: r.tiff.length }
}

// ---------------------------------------------------------------- limits

/**
 * The per-hour limit of the account config for the direction (fax_outbound_per_hour,
 * fax_inbound_per_hour; default 25): faxes created in the last hour, deleted ones
 * included. The account row is locked so that concurrent requests count each other.
 * Over the limit: 429 fax_limit_exceeded with Retry-After (seconds until the oldest
 * fax of the window leaves it).
 */
export async function checkFaxLimit(tx: Db, accountId: string, direction: FaxDirection, now: Date) {
  const [locked] = await tx.select({ config: accounts.config }).from(accounts).where(eq(accounts.id, accountId)).for('update')
  if (!locked) throw notFound('account', accountId)
  const key = direction === 'outbound' ? 'fax_outbound_per_hour' : 'fax_inbound_per_hour'
  const limit = locked.config[key] ?? DEFAULT_ACCOUNT_CONFIG[key]
  const since = new Date(now.getTime() - 3600_000)
  const recent = await tx
    .select({ createdAt: faxes.createdAt })
    .from(faxes)
    .where(and(eq(faxes.accountId, accountId), eq(faxes.direction, direction), gt(faxes.createdAt, since)))
    .orderBy(asc(faxes.createdAt))
  if (recent.length < limit) return
  const oldest = recent[recent.length - limit]!.createdAt
  const wait = Math.max(1, Math.ceil((oldest.getTime() + 3600_000 - now.getTime()) / 1000))
  throw new ApiError(
    429,
    `The account ${direction === 'outbound' ? 'sent' : 'received'} ${recent.length} faxes in the last hour; its limit (${key}) is ${limit}.`,
    'fax_limit_exceeded',
    undefined,
    { 'Retry-After': String(wait) },
  )
}

// ---------------------------------------------------------------- rows

export interface NewFax {
  id: string
  accountId: string
  mode: Mode
  direction: FaxDirection
  did: string
  fromNumber: string
  toNumber: string
  fileId: string
  pages: number
  rendering: FaxRendering
  at: Date
  transport?: 't38' | 'g711'
}

export async function insertFax(tx: Db, f: NewFax): Promise<FaxRow> {
  const inbound = f.direction === 'inbound'
  const [row] = await tx
    .insert(faxes)
    .values({
      id: f.id,
      accountId: f.accountId,
      mode: f.mode,
      direction: f.direction,
      status: inbound ? 'received' : 'queued',
      did: f.did,
      fromNumber: f.fromNumber,
      toNumber: f.toNumber,
      fileId: f.fileId,
      pages: f.pages,
      pagesSent: inbound ? f.pages : null,
      transport: inbound ? (f.transport ?? 't38') : null,
      errorCode: null,
      isRead: !inbound,
      rendering: f.rendering,
      createdAt: f.at,
      updatedAt: f.at,
      completedAt: inbound ? f.at : null,
    })
    .returning()
  return row!
}

/** Receives an inbound fax (sandbox): the row, received, and fax.received with the spec's fields, in one transaction. */
export async function receiveFax(tx: Db, clock: Clock, owner: { platformId: string; accountId: string; mode: Mode }, f: NewFax) {
  const row = await insertFax(tx, { ...f, direction: 'inbound' })
  await appendEvents(tx, clock, [
    {
      platformId: owner.platformId,
      accountId: owner.accountId,
      mode: owner.mode,
      type: 'fax.received',
      data: { fax_id: row.id, from_number: row.fromNumber, to_number: row.toNumber, pages: row.pagesSent, transport: row.transport },
    },
  ])
  return row
}

export async function getFax(db: Db, accountId: string, id: string): Promise<FaxRow> {
  const [row] = await db
    .select()
    .from(faxes)
    .where(and(eq(faxes.id, id), eq(faxes.accountId, accountId), isNull(faxes.deletedAt)))
  if (!row) throw notFound('fax', id)
  return row
}

export interface FaxFilters {
  direction?: FaxDirection
  status?: FaxStatusName
  did?: string
  number?: string
  is_read?: boolean
}

export function listFaxes(db: Db, accountId: string, f: FaxFilters, page: PageRequest) {
  const conds: (SQL | undefined)[] = [eq(faxes.accountId, accountId), isNull(faxes.deletedAt)]
  if (f.direction) conds.push(eq(faxes.direction, f.direction))
  if (f.status) conds.push(eq(faxes.status, f.status))
  if (f.did) conds.push(eq(faxes.did, f.did))
  // The other party: the destination of an outbound fax, the sender of an inbound one.
  if (f.number)
    conds.push(or(and(eq(faxes.direction, 'outbound'), eq(faxes.toNumber, f.number)), and(eq(faxes.direction, 'inbound'), eq(faxes.fromNumber, f.number))))
  if (f.is_read !== undefined) conds.push(eq(faxes.isRead, f.is_read))
  return keysetPage<FaxRow>(db, faxes, and(...conds), page)
}

/** Marks the fax deleted (it leaves every answer; the limits still count it); answers the rendering's blob key to remove. */
export async function markFaxDeleted(tx: Db, id: string, at: Date): Promise<string | null> {
  const [row] = await tx.update(faxes).set({ deletedAt: at }).where(eq(faxes.id, id)).returning()
  if (row?.rendering.status !== 'rendered') return null
  await tx.delete(files).where(eq(files.id, row.rendering.file))
  return row.rendering.storage_key
}

/** The fax as its machine now holds it (the actor's `project` effect). */
export async function projectFax(
  tx: Db,
  id: string,
  s: {
    status: FaxStatusName
    pages_sent: number | null
    transport: 't38' | 'g711' | null
    error_code: string | null
    updated_at: string
    completed_at: string | null
  },
) {
  await tx
    .update(faxes)
    .set({
      status: s.status,
      pagesSent: s.pages_sent,
      transport: s.transport,
      errorCode: s.error_code,
      updatedAt: new Date(s.updated_at),
      completedAt: s.completed_at ? new Date(s.completed_at) : null,
    })
    .where(eq(faxes.id, id))
}

// ---------------------------------------------------------------- view

export async function filesOf(db: Db, rows: FaxRow[]): Promise<Map<string, FileRow>> {
  const ids = [...new Set(rows.flatMap((r) => (r.fileId ? [r.fileId] : [])))]
  const out = new Map<string, FileRow>()
  for (const id of ids) {
    const [f] = await db.select().from(files).where(eq(files.id, id))
    if (f) out.set(id, f)
  }
  return out
}

export function faxView(row: FaxRow, signing: DownloadSigning, expandFile?: Map<string, FileRow>) {
  const r = row.rendering
  const file = row.fileId && expandFile?.get(row.fileId)
  return {
    id: row.id,
    object: 'fax' as const,
    direction: row.direction,
    status: row.status,
    did: row.did,
    from_number: row.fromNumber,
    to_number: row.toNumber,
    file: file ? fileView(file, signing) : row.fileId,
    pages: row.pages,
    pages_transmitted: row.pagesSent,
    transport: row.transport,
    error_code: row.errorCode,
    is_read: row.isRead,
    rendering:
      r.status === 'rendered'
        ? {
            status: r.status,
            format: r.format,
            resolution: r.resolution,
            pages: r.pages,
            file: r.file,
            size: r.size,
            ...signedUrl(signing, r.storage_key, 'image/tiff'),
          }
        : r.status === 'skipped'
          ? { status: r.status, reason: r.reason }
          : { status: r.status },
    created_at: row.createdAt.toISOString(),
    updated_at: row.updatedAt.toISOString(),
    completed_at: row.completedAt?.toISOString() ?? null,
  }
}
