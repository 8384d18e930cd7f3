/** Schedules: weekly hours in a time zone, holidays, and a hold. */
import { Elysia, t } from 'elysia'
import { Id } from '../../src/schemas/common'
import * as S from '../../src/schemas/routing'
import { createSchedule, deleteSchedule, getSchedule, listSchedules, scheduleView, setScheduleHold, updateSchedule } from '../../src/services/routing/schedules'
import type { GatewayDeps } from '../context'
import { accountLevel, op } from '../docs'
import { listEnvelope, listQuery, pageRequest } from '../plugins/lists'
import type { requestContext } from '../plugins/request-context'

const TAG = 'Schedules'
const params = t.Object({ schedule_id: Id('schedule ID') })
const rule = accountLevel()
const notFound = { 404: ['schedule_not_found' as const] }

export function scheduleRoutes(deps: GatewayDeps, base: ReturnType<typeof requestContext>) {
  return new Elysia({ name: 'routes/schedules' })
    .use(base)
    .get(
      '/v1/schedules',
      async ({ auth, query, listContext }) => {
        const ctx = listContext(query)
        return listEnvelope(ctx, await listSchedules(deps.db, auth.account!.id, pageRequest(ctx)), scheduleView)
      },
      {
        query: t.Object(listQuery, { additionalProperties: false }),
        detail: op('listSchedules', { summary: 'List schedules', tag: TAG, auth: rule, list: S.Schedule }),
      },
    )
    .post(
      '/v1/schedules',
      ({ auth, body, mutate }) =>
        mutate(async (tx) => {
          const row = await createSchedule(tx, deps.clock, deps.routingCheck, { id: auth.account!.id, timeZone: auth.account!.config.timezone }, body)
          return { resource: row.id, body: scheduleView(row) }
        }),
      {
        body: S.CreateScheduleRequest,
        detail: op('createSchedule', {
          summary: 'Create a schedule',
          description:
            'time_zone must be an IANA zone; omitted, it is the account’s config.timezone (fixed at creation: a later change of the account’s zone leaves the schedule as it is). Each interval opens before it closes. Problems are a validation_error naming the field (hours.1.close).',
          tag: TAG,
          auth: rule,
          response: S.Schedule,
        }),
      },
    )
    .get('/v1/schedules/:schedule_id', async ({ auth, params }) => scheduleView(await getSchedule(deps.db, auth.account!.id, params.schedule_id)), {
      params,
      detail: op('getSchedule', { summary: 'Get a schedule', tag: TAG, auth: rule, response: S.Schedule, errors: notFound }),
    })
    .post(
      '/v1/schedules/:schedule_id',
      ({ auth, params, body, mutate }) =>
        mutate(async (tx) => {
          const row = await updateSchedule(tx, deps.clock, deps.routingCheck, auth.account!.id, params.schedule_id, body)
          return { resource: row.id, body: scheduleView(row) }
        }),
      {
        params,
        body: S.UpdateScheduleRequest,
        detail: op('updateSchedule', {
          summary: 'Update a schedule',
          description: 'Fields given replace the stored ones; hours and holidays are replaced as whole lists.',
          tag: TAG,
          auth: rule,
          response: S.Schedule,
          errors: notFound,
        }),
      },
    )
    .delete(
      '/v1/schedules/:schedule_id',
      ({ auth, params, mutate }) =>
        mutate(async (tx) => {
          await deleteSchedule(tx, deps.routingCheck, auth.account!.id, params.schedule_id)
          return { resource: params.schedule_id, body: { id: params.schedule_id, object: 'schedule' as const, deleted: true as const } }
        }),
      {
        params,
        detail: op('deleteSchedule', {
          summary: 'Delete a schedule',
          description: 'Refused with 409 routing_object_in_use while a dial plan schedule node reads it.',
          tag: TAG,
          auth: rule,
          response: S.DeletedRoutingObject('schedule'),
          errors: { ...notFound, 409: ['routing_object_in_use'] },
        }),
      },
    )
    .post(
      '/v1/schedules/:schedule_id/hold',
      ({ auth, params, body, mutate }) =>
        mutate(async (tx) => {
          const row = await setScheduleHold(tx, deps.clock, auth.account!.id, params.schedule_id, body.hold)
          return { resource: row.id, body: scheduleView(row) }
        }),
      {
        params,
        body: S.ScheduleHoldRequest,
        detail: op('setScheduleHold', {
          summary: 'Hold a schedule open or closed',
          description: 'Overrides hours and holidays until cleared with DELETE .../hold.',
          tag: TAG,
          auth: rule,
          response: S.Schedule,
          errors: notFound,
        }),
      },
    )
    .delete(
      '/v1/schedules/:schedule_id/hold',
      ({ auth, params, mutate }) =>
        mutate(async (tx) => {
          const row = await setScheduleHold(tx, deps.clock, auth.account!.id, params.schedule_id, null)
          return { resource: row.id, body: scheduleView(row) }
        }),
      {
        params,
        detail: op('clearScheduleHold', { summary: 'Clear a schedule hold', tag: TAG, auth: rule, response: S.Schedule, errors: notFound }),
      },
    )
}
