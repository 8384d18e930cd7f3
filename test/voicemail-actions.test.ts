/** POST /v1/voicemails/{id} (mark read or unread) and DELETE /v1/voicemails/{id}, end to end. */
import { beforeAll, describe, expect, test } from 'bun:test'
import { voicemails } from '../src/db/schema'
import { newId } from '../src/ids'
import { startTestService } from './support/service'

const t = await startTestService()
let c: { key: string; account: string }
let other: { key: string; account: string }

beforeAll(async () => {
  const a = await t.account()
  c = { key: a.key, account: a.id }
  const b = await t.account()
  other = { key: b.key, account: b.id }
})

/** A voicemail as the simulator deposits it. */
async function deposit(accountId: string) {
  const now = new Date()
  const id = newId('voicemail')
  await t.service.database.db
    .insert(voicemails)
    .values({ id, accountId, userId: null, durationSeconds: 5, fromNumber: '+15550001111', createdAt: now, updatedAt: now })
  return id
}

describe('voicemail actions', () => {
  test('mark read, then unread; is_read filters the list', async () => {
    const id = await deposit(c.account)
    const read = await t.call('POST', `/v1/voicemails/${id}`, { ...c, body: { is_read: true } })
    expect([read.status, read.body.is_read]).toEqual([200, true])
    expect((await t.call('GET', '/v1/voicemails?is_read=true', c)).body.data.map((v: { id: string }) => v.id)).toContain(id)
    const unread = await t.call('POST', `/v1/voicemails/${id}`, { ...c, body: { is_read: false } })
    expect(unread.body.is_read).toBe(false)
    const bad = await t.call('POST', `/v1/voicemails/${id}`, { ...c, body: { is_read: 'yes' } })
    expect([bad.status, bad.body.code]).toEqual([400, 'validation_error'])
  })

  test('delete removes the voicemail; another account’s voicemail is 404 for both actions', async () => {
    const id = await deposit(c.account)
    expect((await t.call('POST', `/v1/voicemails/${id}`, { ...other, body: { is_read: true } })).body.code).toBe('voicemail_not_found')
    expect((await t.call('DELETE', `/v1/voicemails/${id}`, other)).body.code).toBe('voicemail_not_found')
    expect((await t.call('DELETE', `/v1/voicemails/${id}`, c)).body).toEqual({ id, object: 'voicemail', deleted: true })
    expect((await t.call('GET', `/v1/voicemails/${id}`, c)).status).toBe(404)
    expect((await t.call('DELETE', `/v1/voicemails/${id}`, c)).status).toBe(404)
  })
})
