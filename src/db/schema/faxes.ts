/**
 * Faxes. An outbound fax's row is the projection its actor (actors/faxes) writes at
 * every step; the actor's machine (machines/fax.ts) holds the lifecycle. An inbound
 * fax arrives whole (status received). The document is a file (POST /v1/files,
 * purpose fax_document); its rendering for fax machines (TIFF G3 at 204x196 dpi) is
 * stored next to the fax as a file of the account (`rendering.file`, image/tiff). A deleted fax keeps its row
 * (deleted_at) so that the per-hour limits still count it.
 */
import { boolean, index, integer, jsonb, pgTable, text } from 'drizzle-orm/pg-core'
import { accounts } from './accounts'
import { ts } from './columns'
import { files } from './media'

/** The document as fax machines take it: rendered by ghostscript, or skipped with the reason. */
export type FaxRendering =
  | { status: 'rendered'; format: 'tiff_g3'; resolution: '204x196'; pages: number; file: string; storage_key: string; size: number }
  | { status: 'skipped'; reason: string }
  | { status: 'not_applicable' }

export const faxes = pgTable(
  'faxes',
  {
    id: text('id').primaryKey(),
    accountId: text('account_id')
      .notNull()
      .references(() => accounts.id, { onDelete: 'cascade' }),
    mode: text('mode', { enum: ['test', 'live'] }).notNull(),
    direction: text('direction', { enum: ['inbound', 'outbound'] }).notNull(),
    status: text('status', { enum: ['queued', 'sending', 'delivered', 'failed', 'received'] }).notNull(),
    /** The account's number (the sender of an outbound fax, the receiver of an inbound one). */
    did: text('did').notNull(),
    fromNumber: text('from_number').notNull(),
    toNumber: text('to_number').notNull(),
    fileId: text('file_id').references(() => files.id, { onDelete: 'set null' }),
    /** Pages of the document. */
    pages: integer('pages').notNull(),
    /** Pages confirmed sent or received (null: never transmitted). */
    pagesSent: integer('pages_sent'),
    transport: text('transport', { enum: ['t38', 'g711'] }),
    errorCode: text('error_code'),
    isRead: boolean('is_read').notNull(),
    rendering: jsonb('rendering').$type<FaxRendering>().notNull(),
    createdAt: ts('created_at').notNull(),
    updatedAt: ts('updated_at').notNull(),
    completedAt: ts('completed_at'),
    deletedAt: ts('deleted_at'),
  },
  (t) => [
    index('faxes_account_page_idx').on(t.accountId, t.createdAt, t.id),
    index('faxes_account_direction_created_idx').on(t.accountId, t.direction, t.createdAt),
  ],
)
