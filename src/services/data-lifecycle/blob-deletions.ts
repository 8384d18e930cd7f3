/**
 * Blobs outlive nothing. A delete that takes records with audio (an account, a user's
 * or a shared box's greetings) records the storage keys it orphans in
 * `storage_deletions`, in its own transaction; the sweeper removes the blobs and then
 * the rows. A crash before the commit leaves both record and blob, one after it leaves
 * rows to sweep, one between a blob's removal and its row's leaves a row whose retry
 * removes nothing more (removing a missing blob is no error). Downloads do not wait
 * for the sweeper: a signed URL is served only while a record still names its key.
 */
import { and, eq, inArray, isNull, lte, or, sql } from 'drizzle-orm'
import type { Clock } from '../../clock'
import type { Db } from '../../db/client'
import { storageDeletions } from '../../db/schema'
import { statement } from '../../db/statements'
import type { Logger } from '../../logger'
import type { BlobStorage } from '../../storage/blob-storage'

/** Records the blobs under `keys` as owed a deletion, inside the caller's transaction (a key already owed one stays as it is). */
export async function scheduleBlobDeletions(tx: Db, keys: readonly (string | null | undefined)[], accountId: string | null = null): Promise<void> {
  const unique = [...new Set(keys.filter((k): k is string => typeof k === 'string' && k.length > 0))]
  if (unique.length === 0) return
  await tx
    .insert(storageDeletions)
    .values(unique.map((key) => ({ key, accountId })))
    .onConflictDoNothing()
}

// Every table whose rows name a blob. A new one must be added here and below, or its
// blobs outlive an account's deletion and its download URLs stop working.
const SCHEDULE_ACCOUNT_BLOBS = statement(
  `insert into storage_deletions (key, account_id)
    select storage_key, account_id from recordings where account_id = $1 and storage_key is not null
    union select storage_key, account_id from voicemails where account_id = $1 and storage_key is not null
    union select storage_key, account_id from voicemail_greetings where account_id = $1
    union select storage_key, account_id from audio_clips where account_id = $1
    union select storage_key, account_id from files where account_id = $1
    union select storage_key, account_id from port_order_documents where account_id = $1
    on conflict (key) do nothing`,
)
// Locks out the account's new rows: their foreign key check needs a key-share lock,
// which this conflicts with, so no record can slip in between reading the keys and
// the cascade that deletes the records.
const LOCK_ACCOUNT = statement<{ id: string }>('select id from accounts where id = $1 for update')

/**
 * Records every blob of the account as owed a deletion, in the transaction that
 * deletes the account (before the cascade takes the rows naming them).
 */
export async function scheduleAccountBlobDeletions(tx: Db, accountId: string): Promise<void> {
  await LOCK_ACCOUNT.rows(tx, [accountId])
  await SCHEDULE_ACCOUNT_BLOBS.rows(tx, [accountId])
}

/**
 * Keys are `<kind>/<account>/<record id>[.wav]` (see the services that store them), so
 * a download is checked with one primary-key lookup. Greetings are the exception: a
 * replaced greeting keeps its row and takes a new key, so they are looked up within
 * the account (the owner/type index starts with it; an account has a few greetings).
 */
const BY_RECORD: Record<string, ReturnType<typeof statement>> = {
  recordings: statement('select 1 as hit from recordings where id = $1 and storage_key = $2'),
  voicemails: statement('select 1 as hit from voicemails where id = $1 and storage_key = $2'),
  'audio-clips': statement('select 1 as hit from audio_clips where id = $1 and storage_key = $2'),
  files: statement('select 1 as hit from files where id = $1 and storage_key = $2'),
}
const GREETING = statement('select 1 as hit from voicemail_greetings where account_id = $1 and storage_key = $2 limit 1')
// A key of no known shape (a kind added without updating this file) is still answered
// correctly, only without an index.
const ANY_RECORD = statement(
  `select 1 as hit from recordings where storage_key = $1
    union all select 1 from voicemails where storage_key = $1
    union all select 1 from voicemail_greetings where storage_key = $1
    union all select 1 from audio_clips where storage_key = $1
    union all select 1 from files where storage_key = $1
    union all select 1 from port_order_documents where storage_key = $1
    limit 1`,
)

/** Whether a record (recording, voicemail, greeting, audio clip, file, port order document) still names this blob. */
export async function blobStillReferenced(db: Db, key: string): Promise<boolean> {
  const parts = key.split('/')
  if (parts.length === 3) {
    const [kind, accountId, name] = parts as [string, string, string]
    if (kind === 'greetings') return (await GREETING.rows(db, [accountId, key])).length > 0
    const byRecord = BY_RECORD[kind]
    if (byRecord) return (await byRecord.rows(db, [name.replace(/\.wav$/, ''), key])).length > 0
  }
  return (await ANY_RECORD.rows(db, [key])).length > 0
}

export interface BlobSweepDeps {
  db: Db
  storage: BlobStorage
  clock: Clock
  log?: Logger
}

export interface BlobSweepOptions {
  /** Keys claimed per round trip. */
  batch?: number
  /** Rounds per run at most: a run always ends, whatever is owed. */
  maxBatches?: number
  /** How long a claim keeps other sweepers off a key; a sweeper that dies holding it is retried after. */
  leaseMs?: number
  /** Only this account's deletions (an operator's targeted run, a test on a shared database). */
  accountId?: string
}

export interface BlobSweepResult {
  /** Blobs removed (or already missing) and their rows deleted. */
  deleted: number
  /** Deletions that failed and wait for their retry. */
  failed: number
  /** Keys a record names again (never expected): their rows were dropped, the blob kept. */
  kept: number
}

const RETRY_BASE_MS = 30_000
const RETRY_MAX_MS = 3600_000
const retryDelayMs = (attempts: number) => Math.min(RETRY_MAX_MS, RETRY_BASE_MS * 2 ** Math.min(Math.max(attempts - 1, 0), 16))

/**
 * Removes the blobs owed a deletion that are due, then their rows. Safe to run in
 * several processes at once (claims skip each other's keys) and after any crash.
 * Times are real time (`wallNow`): storage retries are not simulated durations.
 */
export async function sweepBlobDeletions(deps: BlobSweepDeps, opts: BlobSweepOptions = {}): Promise<BlobSweepResult> {
  const batch = opts.batch ?? 100
  const maxBatches = opts.maxBatches ?? 50
  const leaseMs = opts.leaseMs ?? 5 * 60_000
  const { db, storage, clock } = deps
  const result: BlobSweepResult = { deleted: 0, failed: 0, kept: 0 }
  for (let round = 0; round < maxBatches; round++) {
    const now = clock.wallNow()
    // A claim is a lease: the row stays, due again when the lease ends, until the blob is gone.
    const due = db
      .select({ key: storageDeletions.key })
      .from(storageDeletions)
      .where(
        and(
          or(isNull(storageDeletions.nextAttemptAt), lte(storageDeletions.nextAttemptAt, now)),
          opts.accountId === undefined ? undefined : eq(storageDeletions.accountId, opts.accountId),
        ),
      )
      .orderBy(sql`${storageDeletions.nextAttemptAt} asc nulls first`, storageDeletions.key)
      .limit(batch)
      .for('update', { skipLocked: true })
    const claimed = await db
      .update(storageDeletions)
      .set({ attempts: sql`${storageDeletions.attempts} + 1`, nextAttemptAt: new Date(now.getTime() + leaseMs) })
      .where(inArray(storageDeletions.key, due))
      .returning({ key: storageDeletions.key, attempts: storageDeletions.attempts })
    const done: string[] = []
    for (const { key, attempts } of claimed) {
      try {
        if (await blobStillReferenced(db, key)) {
          // Deleting a blob a record names would break it for good; dropping the request only leaves a blob.
          deps.log?.warn({ key }, 'blob deletion skipped: a record still names the blob')
          await db.delete(storageDeletions).where(eq(storageDeletions.key, key))
          result.kept++
          continue
        }
        await storage.delete(key)
        done.push(key)
      } catch (err) {
        result.failed++
        deps.log?.warn({ err, key, attempts }, 'blob deletion failed; will retry')
        await db
          .update(storageDeletions)
          .set({ nextAttemptAt: new Date(clock.wallNow().getTime() + retryDelayMs(attempts)), lastError: String((err as Error)?.message ?? err).slice(0, 500) })
          .where(and(eq(storageDeletions.key, key), eq(storageDeletions.attempts, attempts)))
      }
    }
    if (done.length > 0) {
      await db.delete(storageDeletions).where(inArray(storageDeletions.key, done))
      result.deleted += done.length
    }
    if (claimed.length < batch) break
  }
  return result
}
