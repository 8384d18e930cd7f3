/** Call queues, their members, and a user's queue-agent standing. */
import { Elysia, t } from 'elysia'
import { Id } from '../../src/schemas/common'
import * as S from '../../src/schemas/routing'
import {
  addQueueMember,
  allQueueMembers,
  createQueue,
  deleteQueue,
  getQueue,
  getQueueAgent,
  listQueueMembers,
  listQueues,
  queueMemberView,
  queueView,
  removeQueueMember,
  updateQueue,
  updateQueueAgent,
} from '../../src/services/routing/queues'
import type { GatewayDeps } from '../context'
import { accountLevel, op } from '../docs'
import { expandQuery, listEnvelope, listQuery, pageRequest } from '../plugins/lists'
import type { requestContext } from '../plugins/request-context'

const TAG = 'Call Queues'
const params = t.Object({ queue_id: Id('queue ID') })
const memberParams = t.Object({ queue_id: Id('queue ID'), member_id: Id('member ID') })
const userParams = t.Object({ user_id: Id('user ID') })
const expand = { 'expand[]': expandQuery('members') }
const rule = accountLevel()
const notFound = { 404: ['queue_not_found' as const] }
const RULES =
  'A timeout target not found in the account, or a change forming a routing loop through ring groups, dial plans or other queues, is refused with 400 queue_validation_failed (QueueValidationFailed) whose details name the field.'
const wantsMembers = (q: { 'expand[]'?: string[] }) => q['expand[]']?.includes('members') ?? false

export function queueRoutes(deps: GatewayDeps, base: ReturnType<typeof requestContext>) {
  return new Elysia({ name: 'routes/queues' })
    .use(base)
    .get(
      '/v1/queues',
      async ({ auth, query, listContext }) => {
        const ctx = listContext(query)
        const page = await listQueues(deps.db, auth.account!.id, pageRequest(ctx))
        const members = wantsMembers(query) ? await Promise.all(page.rows.map((r) => allQueueMembers(deps.db, r.id))) : undefined
        return listEnvelope(ctx, { ...page, rows: page.rows.map((row, i) => ({ row, members: members?.[i] })) }, (x) => queueView(x.row, x.members))
      },
      {
        query: t.Object({ ...listQuery, ...expand }, { additionalProperties: false }),
        detail: op('listQueues', { summary: 'List call queues', tag: TAG, auth: rule, list: S.Queue }),
      },
    )
    .post(
      '/v1/queues',
      ({ auth, body, mutate }) =>
        mutate(async (tx) => {
          const row = await createQueue(tx, deps.clock, deps.routingCheck, auth.account!.id, body)
          return { resource: row.id, body: queueView(row) }
        }),
      {
        body: S.CreateQueueRequest,
        detail: op('createQueue', {
          summary: 'Create a call queue',
          description: RULES,
          tag: TAG,
          auth: rule,
          response: S.Queue,
          errors: { 400: ['queue_validation_failed'] },
        }),
      },
    )
    .get(
      '/v1/queues/:queue_id',
      async ({ auth, params, query }) => {
        const row = await getQueue(deps.db, auth.account!.id, params.queue_id)
        return queueView(row, wantsMembers(query) ? await allQueueMembers(deps.db, row.id) : undefined)
      },
      {
        params,
        query: t.Object(expand, { additionalProperties: false }),
        detail: op('getQueue', { summary: 'Get a call queue', tag: TAG, auth: rule, response: S.Queue, errors: notFound }),
      },
    )
    .post(
      '/v1/queues/:queue_id',
      ({ auth, params, body, mutate }) =>
        mutate(async (tx) => {
          const row = await updateQueue(tx, deps.clock, deps.routingCheck, auth.account!.id, params.queue_id, body)
          return { resource: row.id, body: queueView(row) }
        }),
      {
        params,
        body: S.UpdateQueueRequest,
        detail: op('updateQueue', {
          summary: 'Update a call queue',
          description: RULES,
          tag: TAG,
          auth: rule,
          response: S.Queue,
          errors: { ...notFound, 400: ['queue_validation_failed'] },
        }),
      },
    )
    .delete(
      '/v1/queues/:queue_id',
      ({ auth, params, mutate }) =>
        mutate(async (tx) => {
          await deleteQueue(tx, deps.routingCheck, auth.account!.id, params.queue_id)
          return { resource: params.queue_id, body: { id: params.queue_id, object: 'queue' as const, deleted: true as const } }
        }),
      {
        params,
        detail: op('deleteQueue', {
          summary: 'Delete a call queue',
          description: 'Refused with 409 routing_object_in_use while an extension, a phone number route or another routing object routes to it.',
          tag: TAG,
          auth: rule,
          response: S.DeletedRoutingObject('queue'),
          errors: { ...notFound, 409: ['routing_object_in_use'] },
        }),
      },
    )
    .get(
      '/v1/queues/:queue_id/members',
      async ({ auth, params, query, listContext }) => {
        const queue = await getQueue(deps.db, auth.account!.id, params.queue_id)
        const ctx = listContext(query)
        return listEnvelope(ctx, await listQueueMembers(deps.db, queue.id, pageRequest(ctx)), queueMemberView)
      },
      {
        params,
        query: t.Object(listQuery, { additionalProperties: false }),
        detail: op('listQueueMembers', { summary: 'List the members of a call queue', tag: TAG, auth: rule, list: S.QueueMember, errors: notFound }),
      },
    )
    .post(
      '/v1/queues/:queue_id/members',
      ({ auth, params, body, mutate }) =>
        mutate(async (tx) => {
          const row = await addQueueMember(tx, deps.clock, deps.routingCheck, auth.account!.id, params.queue_id, body.user, deps.actorMessages)
          return { resource: params.queue_id, body: queueMemberView(row) }
        }),
      {
        params,
        body: S.AddQueueMemberRequest,
        detail: op('addQueueMember', {
          summary: 'Add a member (agent) to a call queue',
          description:
            'A user already in the queue is 409 queue_member_conflict (QueueMemberConflict); a user outside the account is 400 queue_validation_failed.',
          tag: TAG,
          auth: rule,
          response: S.QueueMember,
          errors: { ...notFound, 400: ['queue_validation_failed'], 409: ['queue_member_conflict'] },
        }),
      },
    )
    .delete(
      '/v1/queues/:queue_id/members/:member_id',
      ({ auth, params, mutate }) =>
        mutate(async (tx) => {
          const row = await removeQueueMember(tx, auth.account!.id, params.queue_id, params.member_id, { clock: deps.clock, messages: deps.actorMessages })
          return { resource: params.queue_id, body: { ...queueMemberView(row), deleted: true as const } }
        }),
      {
        params: memberParams,
        detail: op('removeQueueMember', {
          summary: 'Remove a member from a call queue',
          tag: TAG,
          auth: rule,
          response: t.Composite([S.QueueMember, t.Object({ deleted: t.Literal(true) })]),
          errors: { 404: ['queue_not_found', 'queue_member_not_found'] },
        }),
      },
    )
    .get('/v1/users/:user_id/queue-agent', ({ auth, params }) => getQueueAgent(deps.db, auth.account!.id, params.user_id), {
      params: userParams,
      detail: op('getQueueAgent', {
        summary: 'Get a user’s queue-agent standing',
        tag: TAG,
        auth: rule,
        response: S.QueueAgent,
        errors: { 404: ['user_not_found'] },
      }),
    })
    .post(
      '/v1/users/:user_id/queue-agent',
      ({ auth, params, body, mutate }) =>
        mutate(async (tx) => {
          const agent = await updateQueueAgent(tx, deps.clock, auth.account!.id, params.user_id, body, deps.actorMessages)
          return { resource: params.user_id, body: agent }
        }),
      {
        params: userParams,
        body: S.UpdateQueueAgentRequest,
        detail: op('updateQueueAgent', {
          summary: 'Set a user’s queue-agent standing',
          description: 'unavailable: no queue dispatches calls to the user until set available again.',
          tag: TAG,
          auth: rule,
          response: S.QueueAgent,
          errors: { 404: ['user_not_found'] },
        }),
      },
    )
}
