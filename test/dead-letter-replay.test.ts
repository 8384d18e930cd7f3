/**
 * POST /admin/dead-letters/{id}/replay on a process without the delivery role: the
 * operator's request may reach any gateway. Reviving the delivery is a change of its
 * row; the delivering process (woken over the bus) sends it. Before, such a process
 * answered 409 and the operator had to find the one that delivers.
 */
import { describe, expect, test } from 'bun:test'
import { eq } from 'drizzle-orm'
import { webhookDeliveries } from '../src/db/schema'
import { newId } from '../src/ids'
import { ADMIN_TOKEN, startTestService } from './support/service'

const t = await startTestService({}, { args: ['--role', 'gateway,worker'] })
const admin = { authorization: `Bearer ${ADMIN_TOKEN}` }

describe('dead-letter replay without the delivery role', () => {
  test('the dead delivery is back in line, due now, with a fresh budget; a second replay is 404', async () => {
    expect(t.service.delivery).toBeUndefined()
    const db = t.service.database.db
    const at = new Date('2026-01-01T00:00:00Z')
    const id = newId('webhookDelivery')
    await db.insert(webhookDeliveries).values({
      id,
      eventSeq: 1,
      eventId: newId('event'),
      endpointId: newId('webhookEndpoint'),
      accountId: newId('account'),
      state: 'dead',
      attempts: 6,
      maxAttempts: 6,
      nextAttemptAt: at,
      lastStatus: 500,
      lastError: 'HTTP 500',
      committedAt: at,
      firstAttemptAt: at,
      createdAt: at,
      updatedAt: at,
    })
    const replay = await t.call('POST', `/admin/dead-letters/${id}/replay`, { headers: admin })
    expect(replay.status).toBe(200)
    expect(replay.body).toEqual({ id, object: 'dead_letter', replayed: true })
    const [row] = await db.select().from(webhookDeliveries).where(eq(webhookDeliveries.id, id))
    expect(row).toMatchObject({ state: 'pending', attempts: 6, maxAttempts: 12 })
    expect(row!.nextAttemptAt.getTime()).toBeLessThanOrEqual(t.service.clock.now().getTime())

    const twice = await t.call('POST', `/admin/dead-letters/${id}/replay`, { headers: admin })
    expect([twice.status, twice.body.code]).toEqual([404, 'dead_letter_not_found'])
  })
})
