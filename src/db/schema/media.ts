/** Uploaded media: files, audio clips and voicemail greetings. Their bytes live in blob storage under `storage_key`. */
import { sql } from 'drizzle-orm'
import { check, index, integer, pgTable, text, uniqueIndex } from 'drizzle-orm/pg-core'
import { accounts, users } from './accounts'
import { ts } from './columns'
import { sharedVoicemailBoxes } from './routing'

export const files = pgTable(
  'files',
  {
    id: text('id').primaryKey(),
    accountId: text('account_id')
      .notNull()
      .references(() => accounts.id, { onDelete: 'cascade' }),
    purpose: text('purpose', { enum: ['audio', 'fax_document'] }).notNull(),
    filename: text('filename'),
    contentType: text('content_type').notNull(),
    sizeBytes: integer('size_bytes').notNull(),
    storageKey: text('storage_key').notNull(),
    createdAt: ts('created_at').notNull(),
  },
  (t) => [index('files_account_page_idx').on(t.accountId, t.createdAt, t.id)],
)

/** The audio columns clips and greetings share: the converted telephony WAV and what was uploaded. */
const audioColumns = () => ({
  storageKey: text('storage_key').notNull(),
  durationMs: integer('duration_ms').notNull(),
  sizeBytes: integer('size_bytes').notNull(),
  sourceFilename: text('source_filename'),
  sourceFormat: text('source_format', { enum: ['wav', 'mp3'] }).notNull(),
  sourceSampleRate: integer('source_sample_rate').notNull(),
  sourceChannels: integer('source_channels').notNull(),
})

export const audioClips = pgTable(
  'audio_clips',
  {
    id: text('id').primaryKey(),
    accountId: text('account_id')
      .notNull()
      .references(() => accounts.id, { onDelete: 'cascade' }),
    name: text('name'),
    ...audioColumns(),
    createdAt: ts('created_at').notNull(),
    updatedAt: ts('updated_at').notNull(),
  },
  (t) => [index('audio_clips_account_page_idx').on(t.accountId, t.createdAt, t.id)],
)

export const voicemailGreetings = pgTable(
  'voicemail_greetings',
  {
    id: text('id').primaryKey(),
    accountId: text('account_id')
      .notNull()
      .references(() => accounts.id, { onDelete: 'cascade' }),
    /** A user or a shared voicemail box of the account: the API's `owner`, equal to whichever of the two columns below is set. */
    ownerId: text('owner_id').notNull(),
    // The owner is of two kinds, so it has two foreign keys, exactly one set: the
    // database itself refuses a greeting of a missing owner and drops it with the owner.
    userId: text('user_id').references(() => users.id, { onDelete: 'cascade' }),
    sharedVoicemailBoxId: text('shared_voicemail_box_id').references(() => sharedVoicemailBoxes.id, { onDelete: 'cascade' }),
    type: text('type', { enum: ['unavailable', 'busy', 'name'] }).notNull(),
    ...audioColumns(),
    createdAt: ts('created_at').notNull(),
    updatedAt: ts('updated_at').notNull(),
  },
  (t) => [
    uniqueIndex('voicemail_greetings_owner_type_uq').on(t.accountId, t.ownerId, t.type),
    index('voicemail_greetings_user_idx').on(t.userId),
    index('voicemail_greetings_box_idx').on(t.sharedVoicemailBoxId),
    check(
      'voicemail_greetings_one_owner_ck',
      sql`num_nonnulls(${t.userId}, ${t.sharedVoicemailBoxId}) = 1 and ${t.ownerId} = coalesce(${t.userId}, ${t.sharedVoicemailBoxId})`,
    ),
  ],
)
