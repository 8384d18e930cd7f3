/** POST /v1/voicemails/{id} (mark read or unread) and DELETE /v1/voicemails/{id}, end to end, through the typed client. */
import { beforeAll, describe, expect, test } from 'bun:test'
import { spawnInTx } from '../actors/runtime/commands'
import { voicemails } from '../src/db/schema'
import { newId } from '../src/ids'
import { apiClient } from './support/api-client'
import { quiescence } from './support/quiescence'
import { startTestService } from './support/service'

const t = await startTestService()
let c: { key: string; account: string; platform: string }
let other: { key: string; account: string }
let api: ReturnType<typeof apiClient>
let otherApi: ReturnType<typeof apiClient>

beforeAll(async () => {
  const p = await t.platform()
  const a = await t.account({ key: p.test_key })
  c = { key: a.key, account: a.id, platform: p.id }
  const b = await t.account()
  other = { key: b.key, account: b.id }
  api = apiClient(t, { key: c.key, account: c.account })
  otherApi = apiClient(t, other)
})

const voicemail = (voicemail_id: string) => ({ params: { path: { voicemail_id } } })

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
    const read = await api.POST('/v1/voicemails/{voicemail_id}', { ...voicemail(id), body: { is_read: true } })
    expect([read.response.status, read.data?.is_read]).toEqual([200, true])
    expect((await api.GET('/v1/voicemails', { params: { query: { is_read: true } } })).data?.data.map((v) => v.id)).toContain(id)
    const unread = await api.POST('/v1/voicemails/{voicemail_id}', { ...voicemail(id), body: { is_read: false } })
    expect(unread.data?.is_read).toBe(false)
    // Deliberately off the schema: the server, not the type checker, must refuse it.
    const bad = await api.POST('/v1/voicemails/{voicemail_id}', { ...voicemail(id), body: { is_read: 'yes' as unknown as boolean } })
    expect([bad.response.status, bad.error?.code]).toEqual([400, 'validation_error'])
  })

  test('delete removes the voicemail; another account’s voicemail is 404 for both actions', async () => {
    const id = await deposit(c.account)
    expect((await otherApi.POST('/v1/voicemails/{voicemail_id}', { ...voicemail(id), body: { is_read: true } })).error?.code).toBe('voicemail_not_found')
    expect((await otherApi.DELETE('/v1/voicemails/{voicemail_id}', voicemail(id))).error?.code).toBe('voicemail_not_found')
    expect((await api.DELETE('/v1/voicemails/{voicemail_id}', voicemail(id))).data).toEqual({ id, object: 'voicemail', deleted: true })
    expect((await api.GET('/v1/voicemails/{voicemail_id}', voicemail(id))).response.status).toBe(404)
    expect((await api.DELETE('/v1/voicemails/{voicemail_id}', voicemail(id))).response.status).toBe(404)
  })

  /** The follow-up actor of a call that reached voicemail, as the call actor spawns it, with one voicemail step; resolves once it has run. */
  async function leaveMessage(step: Record<string, unknown>) {
    const voicemailId = newId('voicemail')
    const simId = `${newId('call')}_followup`
    const at = t.service.clock.now().toISOString()
    const action = { type: 'voicemail', voicemail_id: voicemailId, user_id: null, call_id: null, from_number: '+15550002222', from_name: null }
    await spawnInTx(t.service.database.db, t.service.clock, 'call_sim', simId, {
      sim_id: simId,
      steps: [{ at, action: { ...action, duration_seconds: 7, created_at: at, ...step } }],
      owner: { platformId: c.platform, accountId: c.account, mode: 'test' },
    })
    await t.service.actors?.client?.wake('call_sim', simId)
    await quiescence(t, c.account, [{ kind: 'call_sim', id: simId }])
    return voicemailId
  }
  const listed = async (query: { owner?: string; limit?: number }) => (await api.GET('/v1/voicemails', { params: { query } })).data!.data.map((v) => v.id)

  test('a message left in a shared voicemail box names the box (shared_voicemail_box_id), lists under owner=<box>, and outlives the box', async () => {
    const box = (await api.POST('/v1/shared_voicemail_boxes', { body: { name: 'Support' } })).data!.id
    const boxPath = { params: { path: { shared_voicemail_box_id: box } } }
    const id = await leaveMessage({ shared_voicemail_box_id: box })
    const vm = await api.GET('/v1/voicemails/{voicemail_id}', voicemail(id))
    expect(vm.data).toMatchObject({ id, owner: null, shared_voicemail_box_id: box, duration_seconds: 7 })
    const own = await deposit(c.account)
    expect(await listed({ owner: box })).toEqual([id])
    expect(await listed({ limit: 100 })).toEqual(expect.arrayContaining([id, own]))
    expect((await api.GET('/v1/voicemails/{voicemail_id}', voicemail(own))).data?.shared_voicemail_box_id).toBeNull()

    // The message is a record: deleting the box keeps it, no longer in a box.
    expect((await api.DELETE('/v1/shared_voicemail_boxes/{shared_voicemail_box_id}', boxPath)).response.status).toBe(200)
    expect((await api.GET('/v1/voicemails/{voicemail_id}', voicemail(id))).data).toMatchObject({ id, shared_voicemail_box_id: null })
    expect(await listed({ owner: box })).toEqual([])
  })

  test('a box deleted between the routing and the message: the message is stored without a box, not lost', async () => {
    const box = (await api.POST('/v1/shared_voicemail_boxes', { body: { name: 'Gone soon' } })).data!.id
    expect(
      (await api.DELETE('/v1/shared_voicemail_boxes/{shared_voicemail_box_id}', { params: { path: { shared_voicemail_box_id: box } } })).response.status,
    ).toBe(200)
    const id = await leaveMessage({ shared_voicemail_box_id: box })
    expect((await api.GET('/v1/voicemails/{voicemail_id}', voicemail(id))).data).toMatchObject({ id, owner: null, shared_voicemail_box_id: null })
  })
})
