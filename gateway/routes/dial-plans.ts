/** Dial plans: node graphs a call walks (menus, schedules, prompts, voice apps, routes). */
import { Elysia, t } from 'elysia'
import { Id } from '../../src/schemas/common'
import * as S from '../../src/schemas/routing'
import { createDialPlan, deleteDialPlan, dialPlanView, getDialPlan, listDialPlans, updateDialPlan } from '../../src/services/routing/dial-plans'
import type { GatewayDeps } from '../context'
import { accountLevel, op } from '../docs'
import { expandQuery, listEnvelope, listQuery, pageRequest } from '../plugins/lists'
import type { requestContext } from '../plugins/request-context'
import { expandExtensions } from './routing-expand'

const TAG = 'Dial Plans'
const params = t.Object({ dial_plan_id: Id('dial plan ID') })
const expand = { 'expand[]': expandQuery('extensions') }
const rule = accountLevel()
const notFound = { 404: ['dial_plan_not_found' as const] }
const RULES =
  'Every schedule, voice app and route target must be of this account and every node id of this plan; a plan that would loop (by itself or through ring groups, queues and other plans), or a notify-mode voice_app node naming an AI-agent voice app, is a validation_error whose details name the field (nodes.main.options.0.next).'

export function dialPlanRoutes(deps: GatewayDeps, base: ReturnType<typeof requestContext>) {
  return new Elysia({ name: 'routes/dial-plans' })
    .use(base)
    .get(
      '/v1/dialplans',
      async ({ auth, query, listContext }) => {
        const ctx = listContext(query)
        const page = await listDialPlans(deps.db, auth.account!.id, pageRequest(ctx))
        const exts = await expandExtensions(deps.db, auth.account!.id, query, page.rows)
        return listEnvelope(ctx, page, (row) => ({ ...dialPlanView(row), ...exts(row.id) }))
      },
      {
        query: t.Object({ ...listQuery, ...expand }, { additionalProperties: false }),
        detail: op('listDialPlans', { summary: 'List dial plans', tag: TAG, auth: rule, list: S.DialPlan }),
      },
    )
    .post(
      '/v1/dialplans',
      ({ auth, body, mutate }) =>
        mutate(async (tx) => {
          const row = await createDialPlan(tx, deps.clock, deps.routingCheck, auth.account!.id, body)
          return { resource: row.id, body: dialPlanView(row) }
        }),
      {
        body: S.CreateDialPlanRequest,
        detail: op('createDialPlan', { summary: 'Create a dial plan', description: RULES, tag: TAG, auth: rule, response: S.DialPlan }),
      },
    )
    .get(
      '/v1/dialplans/:dial_plan_id',
      async ({ auth, params, query }) => {
        const row = await getDialPlan(deps.db, auth.account!.id, params.dial_plan_id)
        const exts = await expandExtensions(deps.db, auth.account!.id, query, [row])
        return { ...dialPlanView(row), ...exts(row.id) }
      },
      {
        params,
        query: t.Object(expand, { additionalProperties: false }),
        detail: op('getDialPlan', { summary: 'Get a dial plan', tag: TAG, auth: rule, response: S.DialPlan, errors: notFound }),
      },
    )
    .post(
      '/v1/dialplans/:dial_plan_id',
      ({ auth, params, body, mutate }) =>
        mutate(async (tx) => {
          const row = await updateDialPlan(tx, deps.clock, deps.routingCheck, auth.account!.id, params.dial_plan_id, body)
          return { resource: row.id, body: dialPlanView(row) }
        }),
      {
        params,
        body: S.UpdateDialPlanRequest,
        detail: op('updateDialPlan', {
          summary: 'Update a dial plan',
          description: `Fields given replace the stored ones; nodes replaces the whole graph. ${RULES}`,
          tag: TAG,
          auth: rule,
          response: S.DialPlan,
          errors: notFound,
        }),
      },
    )
    .delete(
      '/v1/dialplans/:dial_plan_id',
      ({ auth, params, mutate }) =>
        mutate(async (tx) => {
          await deleteDialPlan(tx, deps.routingCheck, auth.account!.id, params.dial_plan_id)
          return { resource: params.dial_plan_id, body: { id: params.dial_plan_id, object: 'dial_plan' as const, deleted: true as const } }
        }),
      {
        params,
        detail: op('deleteDialPlan', {
          summary: 'Delete a dial plan',
          description: 'Refused with 409 routing_object_in_use while an extension, a phone number route or another routing object routes to it.',
          tag: TAG,
          auth: rule,
          response: S.DeletedRoutingObject('dial_plan'),
          errors: { ...notFound, 409: ['routing_object_in_use'] },
        }),
      },
    )
}
