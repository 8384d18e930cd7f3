/**
 * The account's config.timezone is read by the PBX: schedules created without a
 * time_zone take it, and every phone's configuration file carries it. An unknown
 * zone is refused when the account is written (400 naming config.timezone, nothing
 * changed), rather than failing each of those later.
 */
import { describe, expect, test } from 'bun:test'
import { sampleAccount, startTestService } from './support/service'

const t = await startTestService({})

describe('config.timezone', () => {
  test('an unknown zone is refused on create and on update, naming config.timezone; the account keeps its zone', async () => {
    const p = await t.platform()
    const create = await t.call<any>('POST', '/v1/accounts', { key: p.test_key, body: sampleAccount({ config: { timezone: 'Mars/Olympus' } }) })
    expect({ status: create.status, code: create.body.code, details: create.body.details }).toEqual({
      status: 400,
      code: 'validation_error',
      details: { 'config.timezone': expect.any(String) },
    })
    expect((await t.call<any>('GET', '/v1/accounts', { key: p.test_key })).body.data).toEqual([])

    const a = await t.account({ key: p.test_key, body: { config: { timezone: 'America/Denver' } } })
    const update = await t.call<any>('POST', `/v1/accounts/${a.id}`, { key: p.test_key, body: { config: { timezone: 'Not a zone' } } })
    expect({ status: update.status, details: update.body.details }).toEqual({ status: 400, details: { 'config.timezone': expect.any(String) } })
    expect((await t.call<any>('GET', `/v1/accounts/${a.id}`, { key: p.test_key })).body.config.timezone).toBe('America/Denver')
    // so a schedule without a zone of its own gets a real one
    const schedule = await t.call<any>('POST', '/v1/schedules', { key: p.test_key, account: a.id, body: { name: 'Office' } })
    expect(schedule.body.time_zone).toBe('America/Denver')
  })
})
