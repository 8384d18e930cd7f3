/**
 * Click-to-calls between the gateway that accepted them and the media process that
 * places them. The gateway writes the request in the transaction that answers 202
 * (so a 202 is never a promise nobody keeps), then tells the media role over the bus;
 * a media process places a request only once it has taken it (`take`: the row is
 * deleted, so exactly one process rings the user's phones however many hear the
 * notice), and every media process also looks for requests whose notice it missed
 * (`takeMissed`: a restart, a bus hiccup). A request not taken within
 * CLICK_TO_CALL_FRESH_MS is dropped: a phone ringing a minute after the click would
 * surprise its user more than help them.
 */
import type { Db } from '../../db/client'
import { statement } from '../../db/statements'
import { newId } from '../../ids'
import type { ClickToCallNotice } from './click-to-call'

/** How long an accepted click-to-call may wait for a media process (real time). */
export const CLICK_TO_CALL_FRESH_MS = 30_000

const INSERT = statement(`insert into click_to_call_requests (id, account_id, notice, created_at) values ($1, $2, $3::jsonb, $4::timestamptz)`)
const TAKE = statement<{ notice: ClickToCallNotice }>(`delete from click_to_call_requests where id = $1 and created_at > $2::timestamptz returning notice`)
const TAKE_MISSED = statement<{ notice: ClickToCallNotice }>(
  `delete from click_to_call_requests
    where id in (select id from click_to_call_requests where created_at > $1::timestamptz and created_at <= $2::timestamptz
                  order by created_at limit 50 for update skip locked)
    returning notice`,
)
const DROP_STALE = statement<{ id: string }>(`delete from click_to_call_requests where created_at <= $1::timestamptz returning id`)

/** Writes the request (in the caller's transaction); the notice to publish after the commit carries its id. */
export async function recordClickToCall(tx: Db, notice: Omit<ClickToCallNotice, 'request_id'>, wallNow: Date): Promise<ClickToCallNotice> {
  const withId: ClickToCallNotice = { ...notice, request_id: newId('request') }
  await INSERT.rows(tx, [withId.request_id, notice.owner.accountId, JSON.stringify(withId), wallNow.toISOString()])
  return withId
}

/** Takes the request named by a notice; undefined when another process took it, or it is no longer fresh. */
export async function takeClickToCall(db: Db, requestId: string, wallNow: Date): Promise<ClickToCallNotice | undefined> {
  const [row] = await TAKE.rows(db, [requestId, new Date(wallNow.getTime() - CLICK_TO_CALL_FRESH_MS).toISOString()])
  return row ? parsed(row.notice) : undefined
}

/**
 * Requests nobody took whose notice may have been missed: those at least `graceMs`
 * old (younger ones are still on their way through the bus), at most 50 at a time.
 * Stale ones are dropped; their count is returned for the log.
 */
export async function takeMissedClickToCalls(db: Db, wallNow: Date, graceMs: number): Promise<{ taken: ClickToCallNotice[]; dropped: number }> {
  const fresh = new Date(wallNow.getTime() - CLICK_TO_CALL_FRESH_MS).toISOString()
  const dropped = (await DROP_STALE.rows(db, [fresh])).length
  const taken = await TAKE_MISSED.rows(db, [fresh, new Date(wallNow.getTime() - graceMs).toISOString()])
  return { taken: taken.map((r) => parsed(r.notice)), dropped }
}

/** postgres.js and PGlite both return jsonb as a value; a string is parsed (a driver that does not). */
const parsed = (notice: unknown): ClickToCallNotice => (typeof notice === 'string' ? JSON.parse(notice) : notice) as ClickToCallNotice
