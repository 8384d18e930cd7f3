/**
 * Accepted click-to-calls against a real database (PGlite; PostgreSQL with
 * DATABASE_URL): a request is taken once, however many media processes try at once;
 * one whose notice was missed is taken by a poll once its notice had time to arrive;
 * one nobody took in time is dropped, never placed late.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { eq } from 'drizzle-orm'
import { manualClock } from '../../clock'
import { type Database, openDatabase } from '../../db/client'
import { accounts, clickToCallRequests } from '../../db/schema'
import { newId } from '../../ids'
import { ensureBootstrapPlatform } from '../platform/platforms'
import type { ClickToCallNotice } from './click-to-call'
import { CLICK_TO_CALL_FRESH_MS, recordClickToCall, takeClickToCall, takeMissedClickToCalls } from './click-to-call-requests'

let database: Database
let platformId: string
let accountId: string
const clock = manualClock('2026-06-10T12:00:00.000Z')

beforeAll(async () => {
  database = await openDatabase({ databaseUrl: process.env.DATABASE_URL, dataDir: 'memory://' })
  await database.migrate()
  platformId = (await ensureBootstrapPlatform(database.db, clock, { liveEnabled: false })).platformId
  accountId = newId('account')
  await database.db.insert(accounts).values({ id: accountId, platformId, mode: 'test', config: {} as never, createdAt: clock.now(), updatedAt: clock.now() })
})
afterAll(async () => {
  if (accountId) await database.db.delete(accounts).where(eq(accounts.id, accountId))
  await database?.close()
})

const notice = (): Omit<ClickToCallNotice, 'request_id'> => ({
  owner: { platformId, accountId, mode: 'test' },
  plan: { kind: 'connect_internal', from_user_id: newId('user'), ring_devices: [], to_user_id: newId('user'), extension: '101', caller_id: null },
  at: clock.now().toISOString(),
})
const at = (ms: number) => new Date(Date.parse('2026-06-10T12:00:00.000Z') + ms)
/** Each test on its own: nothing left from another. */
const clear = () => database.db.delete(clickToCallRequests).where(eq(clickToCallRequests.accountId, accountId))

describe('click-to-call requests', () => {
  test('recorded in the request’s transaction; taken once, whoever asks twice or at once', async () => {
    await clear()
    const recorded = await database.db.transaction((tx) => recordClickToCall(tx, notice(), at(0)))
    expect(recorded.request_id).toStartWith('req_')
    const [first, second] = await Promise.all([
      takeClickToCall(database.db, recorded.request_id, at(100)),
      takeClickToCall(database.db, recorded.request_id, at(100)),
    ])
    expect([first, second].filter(Boolean)).toEqual([recorded])
    expect(await takeClickToCall(database.db, recorded.request_id, at(200))).toBeUndefined()
  })

  test('a request rolled back with its transaction was never there', async () => {
    await clear()
    let id = ''
    await database.db
      .transaction(async (tx) => {
        id = (await recordClickToCall(tx, notice(), at(0))).request_id
        throw new Error('the request failed after planning')
      })
      .catch(() => {})
    expect(await takeClickToCall(database.db, id, at(100))).toBeUndefined()
  })

  test('a missed notice: the poll takes the request once its notice had time to arrive, not before; a stale one is dropped, never placed', async () => {
    await clear()
    const stale = await recordClickToCall(database.db, notice(), at(0))
    const missed = await recordClickToCall(database.db, notice(), at(CLICK_TO_CALL_FRESH_MS - 500))
    const onItsWay = await recordClickToCall(database.db, notice(), at(CLICK_TO_CALL_FRESH_MS + 900))
    const now = at(CLICK_TO_CALL_FRESH_MS + 1_000)
    const first = await takeMissedClickToCalls(database.db, now, 1_000)
    expect(first).toEqual({ taken: [missed], dropped: 1 })
    expect(await takeClickToCall(database.db, stale.request_id, now)).toBeUndefined()
    // The one still on its way is the notice's to take.
    expect(await takeClickToCall(database.db, onItsWay.request_id, now)).toEqual(onItsWay)
    expect(await takeMissedClickToCalls(database.db, now, 1_000)).toEqual({ taken: [], dropped: 0 })
  })
})
