/**
 * Data lifecycle: deleting an account takes its recordings', voicemails' and uploads'
 * blobs with it (durably: recorded in the delete's transaction, removed by a sweeper
 * that survives failing half-way) and its download URLs stop working at once; the
 * outbox keeps events only as long as someone may need them.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { eq, inArray } from 'drizzle-orm'
import { createKeyRing, parseMasterKey } from '../src/auth/key-encryption'
import { manualClock } from '../src/clock'
import { openDatabase, type Database } from '../src/db/client'
import { eventOutbox, events, recordings, storageDeletions, voicemails, webhookAttempts, webhookDeliveries } from '../src/db/schema'
import { createLogger } from '../src/logger'
import { DEAD_LETTER_RETENTION_MS, purgeOldEvents } from '../src/events/retention'
import { RESUME_WINDOW_MS } from '../src/events/stream'
import { newId } from '../src/ids'
import { deleteAccount } from '../src/services/accounts/accounts'
import { blobStillReferenced, scheduleBlobDeletions, sweepBlobDeletions } from '../src/services/data-lifecycle/blob-deletions'
import { startDataLifecycle } from '../src/services/data-lifecycle/sweeper'
import type { BlobStorage } from '../src/storage/blob-storage'
import { diskStorage, memoryStorage } from '../src/storage/create-storage'
import { DEFAULT_DOWNLOAD_TTL_MS, loadDownloadSigningKey, signDownload } from '../src/storage/download-urls'
import { addBusinessDays, easternDate } from '../src/services/porting/business-days'
import { pcmWav } from './fixtures/pcm-wav'
import { download, upload } from './fixtures/upload'
import { callSandboxes } from './support/call-sandbox'
import { freshDataDir } from './support/data-dir'
import { makePdf } from './support/pdf'
import { until } from './support/polling'
import { quiescenceState } from './support/quiescence'
import { startTestService, TEST_MASTER_KEY } from './support/service'

// Blobs on disk, where this test can see them; the database stays PGlite (or DATABASE_URL).
const dir = freshDataDir('data-lifecycle')
afterAll(() => dir.dispose())
const t = await startTestService({ DATA_DIR: dir.dataDir, EMBEDDED_DATABASE: 'pglite', VOICE_CLOCK_SPEED: '200', WEBHOOK_ALLOW_PRIVATE_TARGETS: '1' })
const { sandbox, simulate } = callSandboxes(t)
const blobs = diskStorage(join(dir.dataDir, 'blobs'))
const onDisk = (key: string) => existsSync(join(dir.dataDir, 'blobs', key))
const db = t.service.database.db
const wav = () => pcmWav({ sampleRate: 8000, channels: 1, bits: 16, seconds: 0.3 })

describe('deleting an account', () => {
  test('its recording, voicemail, clip and greeting blobs go, and their download URLs answer 404', async () => {
    const c = await sandbox()
    const answered = await simulate(c, { outcome: 'answered', ring_seconds: 1, talk_seconds: 5 })
    await simulate(c, { outcome: 'voicemail', ring_seconds: 1, voicemail_seconds: 3 })
    const recording = await until('the recording', async () => {
      const r = await t.call('GET', `/v1/calls/${answered}/recording`, c)
      return r.status === 200 && r.body
    })
    const [vm] = await until('the voicemail', async () => {
      const rows = await db.select({ id: voicemails.id, key: voicemails.storageKey }).from(voicemails).where(eq(voicemails.accountId, c.account))
      return rows.length === 1 && rows[0]!.key !== null && rows
    })
    // The API shows no voicemail URL yet; one signed with the server's key is what it would show.
    const signingKey = await loadDownloadSigningKey(db, createKeyRing(parseMasterKey(TEST_MASTER_KEY)!))
    const expiresAt = new Date(t.service.clock.wallNow().getTime() + DEFAULT_DOWNLOAD_TTL_MS)
    const voicemailUrl = `${t.baseUrl}${signDownload(signingKey, { key: vm!.key!, contentType: 'audio/wav', expiresAt })}`
    const clip = await upload(t, '/v1/audio_clips', c, { form: { name: 'Hold', file: { bytes: wav(), name: 'h.wav', type: 'audio/wav' } } })
    const greeting = await upload(t, `/v1/voicemail_greetings/${c.user}/unavailable`, c, { raw: wav(), type: 'audio/wav' })
    expect([clip.status, greeting.status]).toEqual([200, 200])
    const urls = [recording.url as string, voicemailUrl, clip.body.url as string, greeting.body.url as string]
    for (const url of urls) expect((await download(url)).status).toBe(200)
    // The calls' actors done (webhook deliveries may still be under way: they touch no blob).
    await until('the calls and their follow-ups to finish', async () => {
      const s = await quiescenceState(t, c.account, 'every actor of the account')
      return s.active.length === 0 && s.timers.length === 0
    })

    const recordingKey = (await db.select({ key: recordings.storageKey }).from(recordings).where(eq(recordings.accountId, c.account)))[0]?.key
    const keys = [recordingKey!, vm!.key!, `audio-clips/${c.account}/${clip.body.id}.wav`]
    expect(keys.map(onDisk)).toEqual([true, true, true])
    expect((await t.call('DELETE', `/v1/accounts/${c.account}`, c)).status).toBe(200)
    // Dead at once, before any sweep: no record names the blobs any more.
    for (const url of urls) expect((await download(url)).status).toBe(404)

    const swept = await sweepBlobDeletions({ db, storage: blobs, clock: t.service.clock }, { accountId: c.account })
    expect(swept.failed).toBe(0)
    const left = await db.select().from(storageDeletions).where(eq(storageDeletions.accountId, c.account))
    expect(left).toEqual([])
    expect(keys.map(onDisk)).toEqual([false, false, false])
    const accountBlobs = ['recordings', 'voicemails', 'audio-clips', 'greetings'].map((kind) => join(dir.dataDir, 'blobs', kind, c.account))
    for (const folder of accountBlobs) {
      const files = existsSync(folder) ? await Array.fromAsync(new Bun.Glob('*').scan(folder)) : []
      expect(files).toEqual([])
    }
    for (const url of urls) expect((await download(url)).status).toBe(404)
  }, 30_000)

  test('its port order documents go too: the uploaded bill copy and the letter of authorization written at submit', async () => {
    const c = await sandbox()
    const line = String(2000 + Math.floor(Math.random() * 4000))
    const number = `+1${2 + Math.floor(Math.random() * 7)}12${3 + Math.floor(Math.random() * 6)}55${line}`
    const order = await t.call('POST', '/v1/port-orders', {
      ...c,
      body: {
        phone_numbers: [number],
        subscriber: { business_name: 'Acme', approver_name: 'Ada' },
        requested_foc_date: addBusinessDays(easternDate(new Date()), 8),
      },
    })
    expect(order.status).toBe(200)
    const form = new FormData()
    form.set('file', new Blob([makePdf(1, 'Bill')], { type: 'application/pdf' }), 'bill.pdf')
    const up = await fetch(`${t.baseUrl}/v1/port-orders/${order.body.id}/bill-copy`, {
      method: 'POST',
      headers: { authorization: `Bearer ${c.key}`, 'service-account': c.account },
      body: form,
    })
    expect(up.status).toBe(200)
    expect((await t.call('POST', `/v1/port-orders/${order.body.id}/approve`, { ...c, body: { signature: 'Ada', ip: '203.0.113.9' } })).status).toBe(200)
    expect((await t.call('POST', `/v1/port-orders/${order.body.id}/submit`, c)).status).toBe(200)
    const folder = join(dir.dataDir, 'blobs', 'port-orders', c.account, order.body.id)
    const stored = await Array.fromAsync(new Bun.Glob('*').scan(folder))
    expect(stored.map((f) => f.replace(/_[0-9a-z]+\.pdf$/, '')).sort()).toEqual(['bill_copy', 'loa'])

    expect((await t.call('DELETE', `/v1/accounts/${c.account}`, c)).status).toBe(200)
    const swept = await sweepBlobDeletions({ db, storage: blobs, clock: t.service.clock }, { accountId: c.account })
    expect(swept).toMatchObject({ deleted: 2, failed: 0, kept: 0 })
    expect(existsSync(folder) ? await Array.fromAsync(new Bun.Glob('*').scan(folder)) : []).toEqual([])
  }, 30_000)

  test('the blobs owed are recorded in the delete’s own transaction: a rollback records nothing and deletes nothing; a named blob is never deleted', async () => {
    const a = await t.account()
    const c = { key: a.key, account: a.id }
    const clip = await upload(t, '/v1/audio_clips', c, { form: { name: 'Hold', file: { bytes: wav(), name: 'h.wav', type: 'audio/wav' } } })
    expect(clip.status).toBe(200)
    const key = `audio-clips/${a.id}/${clip.body.id}.wav`
    const seenInside = await db
      .transaction(async (tx) => {
        await deleteAccount(tx, a.id)
        const owed = await tx.select({ key: storageDeletions.key }).from(storageDeletions).where(eq(storageDeletions.accountId, a.id))
        // A crash here (before the commit) must leave the account whole.
        throw Object.assign(new Error('crash before commit'), { owed })
      })
      .catch((e: { owed?: { key: string }[] }) => e.owed)
    expect(seenInside).toEqual([{ key }])
    expect(await db.select().from(storageDeletions).where(eq(storageDeletions.accountId, a.id))).toEqual([])
    expect((await t.call('GET', `/v1/accounts/${a.id}`, { key: a.key })).status).toBe(200)
    expect((await download(clip.body.url)).status).toBe(200)
    expect(await blobStillReferenced(db, key)).toBe(true)
    // A deletion asked for a blob a record still names (never expected) is dropped, the blob kept.
    await scheduleBlobDeletions(db, [key], a.id)
    expect(await sweepBlobDeletions({ db, storage: blobs, clock: t.service.clock }, { accountId: a.id })).toEqual({ deleted: 0, failed: 0, kept: 1 })
    expect((await download(clip.body.url)).status).toBe(200)
    expect((await t.call('DELETE', `/v1/accounts/${a.id}`, { key: a.key })).status).toBe(200)
    expect(await blobStillReferenced(db, key)).toBe(false)
    await sweepBlobDeletions({ db, storage: blobs, clock: t.service.clock }, { accountId: a.id })
    expect(onDisk(key)).toBe(false)
  }, 30_000)
})

// The sweeper and the purge work over whole tables: on a database of their own, so
// that nothing another test (or process) is doing runs into them, nor they into it.
describe('sweeping and purging on a database of their own', () => {
  let own: Database
  beforeAll(async () => {
    own = await openDatabase({ dataDir: 'memory://' })
    await own.migrate()
  })
  afterAll(() => own?.close())

  test('a sweeper that fails half-way leaves the rest owed, retried later until done', async () => {
    const clock = manualClock('2030-01-01T00:00:00.000Z')
    const store = memoryStorage()
    const keys = ['recordings/acct_x/rec_1.wav', 'recordings/acct_x/rec_2.wav', 'voicemails/acct_x/vm_3.wav']
    for (const k of keys) await store.put(k, new Uint8Array([1]), 'audio/wav')
    await own.db.transaction((tx) => scheduleBlobDeletions(tx, [...keys, keys[0], null], 'acct_x'))
    let failing = true
    const flaky: BlobStorage = {
      ...store,
      async delete(key) {
        if (failing && key === keys[1]) throw new Error('disk unplugged')
        await store.delete(key)
      },
    }
    const first = await sweepBlobDeletions({ db: own.db, storage: flaky, clock }, { batch: 2 })
    expect(first).toEqual({ deleted: 2, failed: 1, kept: 0 })
    const owed = await own.db.select().from(storageDeletions)
    expect(owed.map((r) => [r.key, r.attempts, r.lastError])).toEqual([[keys[1]!, 1, 'disk unplugged']])
    expect(await store.get(keys[1]!)).toBeDefined()
    // Not again before its backoff, whatever runs.
    expect(await sweepBlobDeletions({ db: own.db, storage: flaky, clock })).toEqual({ deleted: 0, failed: 0, kept: 0 })
    failing = false
    clock.advance(3600_000)
    expect(await sweepBlobDeletions({ db: own.db, storage: flaky, clock })).toEqual({ deleted: 1, failed: 0, kept: 0 })
    expect(await own.db.select().from(storageDeletions)).toEqual([])
    for (const k of keys) expect(await store.get(k)).toBeUndefined()

    // A sweeper that died holding its claim: the key is due again once the lease ends.
    await scheduleBlobDeletions(own.db, ['files/acct_x/file_9'], 'acct_x')
    await own.db.update(storageDeletions).set({ attempts: 1, nextAttemptAt: new Date(clock.now().getTime() + 60_000) })
    expect((await sweepBlobDeletions({ db: own.db, storage: store, clock })).deleted).toBe(0)
    clock.advance(60_000)
    expect((await sweepBlobDeletions({ db: own.db, storage: store, clock })).deleted).toBe(1)
  })

  test('the periodic runner sweeps on start and on demand, and stop waits for it', async () => {
    const clock = manualClock('2030-06-01T00:00:00.000Z')
    const store = memoryStorage()
    await store.put('files/acct_y/file_1', new Uint8Array([1]), 'application/pdf')
    await scheduleBlobDeletions(own.db, ['files/acct_y/file_1'], 'acct_y')
    const lifecycle = startDataLifecycle({ db: own.db, clock, log: createLogger('silent'), storage: store, events: true })
    await lifecycle.runOnce()
    expect(await store.get('files/acct_y/file_1')).toBeUndefined()
    expect(await own.db.select().from(storageDeletions).where(eq(storageDeletions.accountId, 'acct_y'))).toEqual([])
    await lifecycle.stop()
  })

  test('old events go in batches with their finished deliveries; pending, undispatched, recent and recently dead ones stay', async () => {
    const clock = manualClock('1990-03-01T00:00:00.000Z')
    const at = (iso: string) => new Date(iso)
    const old = at('1990-01-01T00:00:00.000Z')
    const cases = [
      { name: 'no deliveries', dispatched: true, createdAt: old, deliveries: [] as { state: 'pending' | 'delivered' | 'dead'; updatedAt: Date }[] },
      { name: 'delivered', dispatched: true, createdAt: old, deliveries: [{ state: 'delivered' as const, updatedAt: old }] },
      { name: 'dead recently', dispatched: true, createdAt: old, deliveries: [{ state: 'dead' as const, updatedAt: at('1990-02-20T00:00:00.000Z') }] },
      {
        name: 'dead long ago',
        dispatched: true,
        createdAt: old,
        deliveries: [
          { state: 'dead' as const, updatedAt: at('1990-01-05T00:00:00.000Z') },
          { state: 'delivered' as const, updatedAt: old },
        ],
      },
      { name: 'pending', dispatched: true, createdAt: old, deliveries: [{ state: 'pending' as const, updatedAt: old }] },
      { name: 'undispatched', dispatched: false, createdAt: old, deliveries: [] },
      { name: 'in the window', dispatched: true, createdAt: new Date(clock.now().getTime() - RESUME_WINDOW_MS + 60_000), deliveries: [] },
    ]
    expect(clock.now().getTime() - at('1990-02-20T00:00:00.000Z').getTime()).toBeLessThan(DEAD_LETTER_RETENTION_MS)
    const ids = new Map<string, string>()
    for (const k of cases) {
      const id = newId('event')
      ids.set(k.name, id)
      const [row] = await own.db
        .insert(events)
        .values({ id, platformId: 'plat_x', accountId: 'acct_x', mode: 'test', type: 'call.end', body: '{}', createdAt: k.createdAt })
        .returning({ seq: events.seq })
      // Written undispatched (in the outbox), as every event is; a dispatched one has left it.
      if (k.dispatched) await own.db.delete(eventOutbox).where(eq(eventOutbox.seq, row!.seq))
      for (const d of k.deliveries) {
        const deliveryId = newId('webhookDelivery')
        // Each delivery's attempt log goes with it.
        await own.db.insert(webhookAttempts).values({
          id: `wha_${deliveryId}`,
          endpointId: 'we_x',
          deliveryId,
          eventSeq: row!.seq,
          eventId: id,
          eventType: 'call.end',
          attempt: 1,
          succeeded: d.state === 'delivered',
          statusCode: d.state === 'delivered' ? 200 : 500,
          durationMs: 5,
          createdAt: d.updatedAt,
        })
        await own.db.insert(webhookDeliveries).values({
          id: deliveryId,
          eventSeq: row!.seq,
          eventId: id,
          endpointId: 'we_x',
          accountId: 'acct_x',
          state: d.state,
          attempts: 1,
          maxAttempts: 6,
          nextAttemptAt: d.updatedAt,
          committedAt: k.createdAt,
          createdAt: k.createdAt,
          updatedAt: d.updatedAt,
        })
      }
    }
    const r = await purgeOldEvents(own.db, clock, { batch: 2 })
    expect(r).toEqual({ events: 3, deliveries: 3, attempts: 3, batches: 4, next: 0 })
    const leftEvents = await own.db.select({ id: events.id }).from(events)
    const kept = ['dead recently', 'pending', 'undispatched', 'in the window'].map((n) => ids.get(n)!)
    expect(leftEvents.map((e) => e.id).sort()).toEqual([...kept].sort())
    const leftDeliveries = await own.db.select({ eventId: webhookDeliveries.eventId, state: webhookDeliveries.state }).from(webhookDeliveries)
    expect(leftDeliveries.map((d) => d.eventId).sort()).toEqual([ids.get('dead recently')!, ids.get('pending')!].sort())
    const leftAttempts = await own.db.select({ eventId: webhookAttempts.eventId }).from(webhookAttempts)
    expect(leftAttempts.map((a) => a.eventId).sort()).toEqual([ids.get('dead recently')!, ids.get('pending')!].sort())

    // A bounded run stops where it got to, and the next one goes on from there.
    await own.db
      .update(webhookDeliveries)
      .set({ state: 'delivered' })
      .where(inArray(webhookDeliveries.eventId, [ids.get('pending')!]))
    await own.db.delete(eventOutbox).where(
      inArray(
        eventOutbox.seq,
        own.db
          .select({ seq: events.seq })
          .from(events)
          .where(eq(events.id, ids.get('undispatched')!)),
      ),
    )
    const partial = await purgeOldEvents(own.db, clock, { batch: 1, maxBatches: 2 })
    expect(partial.batches).toBe(2)
    expect(partial.next).toBeGreaterThan(0)
    const rest = await purgeOldEvents(own.db, clock, { batch: 1, after: partial.next })
    expect(partial.events + rest.events).toBe(2)
    expect(rest.next).toBe(0)
    const finally_ = await own.db.select({ id: events.id }).from(events)
    expect(finally_.map((e) => e.id).sort()).toEqual([ids.get('dead recently')!, ids.get('in the window')!].sort())
  })
})
