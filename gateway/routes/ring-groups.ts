/** Ring groups and their members. */
import { Elysia, t } from 'elysia'
import { Id } from '../../src/schemas/common'
import * as S from '../../src/schemas/routing'
import {
  addRingGroupMember,
  createRingGroup,
  deleteRingGroup,
  getRingGroup,
  listRingGroups,
  removeRingGroupMember,
  ringGroupMemberView,
  ringGroupView,
  updateRingGroup,
} from '../../src/services/routing/ring-groups'
import type { GatewayDeps } from '../context'
import { accountLevel, op } from '../docs'
import { expandQuery, listEnvelope, listQuery, pageRequest } from '../plugins/lists'
import type { requestContext } from '../plugins/request-context'

const TAG = 'Ring Groups'
const params = t.Object({ ring_group_id: Id('ring group ID') })
const memberParams = t.Object({ ring_group_id: Id('ring group ID'), member_id: Id('member ID') })
const expand = { 'expand[]': expandQuery('members') }
const rule = accountLevel()
const withMembers = (q: { 'expand[]'?: string[] }) => ({ members: q['expand[]']?.includes('members') ?? false })

export function ringGroupRoutes(deps: GatewayDeps, base: ReturnType<typeof requestContext>) {
  return new Elysia({ name: 'routes/ring-groups' })
    .use(base)
    .get(
      '/v1/ring_groups',
      async ({ auth, query, listContext }) => {
        const ctx = listContext(query)
        const page = await listRingGroups(deps.db, auth.account!.id, pageRequest(ctx))
        return listEnvelope(ctx, page, (row) => ringGroupView(row, withMembers(query)))
      },
      {
        query: t.Object({ ...listQuery, ...expand }, { additionalProperties: false }),
        detail: op('listRingGroups', { summary: 'List ring groups', tag: TAG, auth: rule, list: S.RingGroup }),
      },
    )
    .post(
      '/v1/ring_groups',
      ({ auth, body, mutate }) =>
        mutate(async (tx) => {
          const row = await createRingGroup(tx, deps.clock, deps.routingCheck, auth.account!.id, body)
          return { resource: row.id, body: ringGroupView(row, { members: true }) }
        }),
      {
        body: S.CreateRingGroupRequest,
        detail: op('createRingGroup', {
          summary: 'Create a ring group',
          description:
            'Members must be users of the account and the no-answer target a routing target of the account; a change that would form a routing loop is a validation_error naming the field. The answer inlines the members.',
          tag: TAG,
          auth: rule,
          response: S.RingGroup,
        }),
      },
    )
    .get(
      '/v1/ring_groups/:ring_group_id',
      async ({ auth, params, query }) => ringGroupView(await getRingGroup(deps.db, auth.account!.id, params.ring_group_id), withMembers(query)),
      {
        params,
        query: t.Object(expand, { additionalProperties: false }),
        detail: op('getRingGroup', { summary: 'Get a ring group', tag: TAG, auth: rule, response: S.RingGroup, errors: { 404: ['ring_group_not_found'] } }),
      },
    )
    .post(
      '/v1/ring_groups/:ring_group_id',
      ({ auth, params, body, mutate }) =>
        mutate(async (tx) => {
          const row = await updateRingGroup(tx, deps.clock, deps.routingCheck, auth.account!.id, params.ring_group_id, body)
          return { resource: row.id, body: ringGroupView(row, { members: true }) }
        }),
      {
        params,
        body: S.UpdateRingGroupRequest,
        detail: op('updateRingGroup', {
          summary: 'Update a ring group',
          description: 'Fields given replace the stored ones; members, when given, replaces the whole list. The same rules as create.',
          tag: TAG,
          auth: rule,
          response: S.RingGroup,
          errors: { 404: ['ring_group_not_found'] },
        }),
      },
    )
    .delete(
      '/v1/ring_groups/:ring_group_id',
      ({ auth, params, mutate }) =>
        mutate(async (tx) => {
          await deleteRingGroup(tx, deps.routingCheck, auth.account!.id, params.ring_group_id)
          return { resource: params.ring_group_id, body: { id: params.ring_group_id, object: 'ring_group' as const, deleted: true as const } }
        }),
      {
        params,
        detail: op('deleteRingGroup', {
          summary: 'Delete a ring group',
          description: 'Refused with 409 routing_object_in_use while an extension, a phone number route or another routing object routes to it.',
          tag: TAG,
          auth: rule,
          response: S.DeletedRoutingObject('ring_group'),
          errors: { 404: ['ring_group_not_found'], 409: ['routing_object_in_use'] },
        }),
      },
    )
    .post(
      '/v1/ring_groups/:ring_group_id/members',
      ({ auth, params, body, mutate }) =>
        mutate(async (tx) => {
          const member = await addRingGroupMember(tx, deps.clock, deps.routingCheck, auth.account!.id, params.ring_group_id, body)
          return { resource: params.ring_group_id, body: member }
        }),
      {
        params,
        body: S.AddRingGroupMemberRequest,
        detail: op('addRingGroupMember', {
          summary: 'Add a member to a ring group (last in ring order)',
          tag: TAG,
          auth: rule,
          response: S.RingGroupMember,
          errors: { 404: ['ring_group_not_found'], 409: ['ring_group_member_conflict'] },
        }),
      },
    )
    .delete(
      '/v1/ring_groups/:ring_group_id/members/:member_id',
      ({ auth, params, mutate }) =>
        mutate(async (tx) => {
          const member = await removeRingGroupMember(tx, deps.clock, auth.account!.id, params.ring_group_id, params.member_id)
          return { resource: params.ring_group_id, body: { ...ringGroupMemberView(params.ring_group_id, member), deleted: true as const } }
        }),
      {
        params: memberParams,
        detail: op('removeRingGroupMember', {
          summary: 'Remove a member from a ring group',
          tag: TAG,
          auth: rule,
          response: t.Composite([S.RingGroupMember, t.Object({ deleted: t.Literal(true) })]),
          errors: { 404: ['ring_group_not_found', 'ring_group_member_not_found'] },
        }),
      },
    )
}
