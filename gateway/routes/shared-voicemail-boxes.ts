/** Shared voicemail boxes: a routing target that takes a message for a team. */
import { Elysia, t } from 'elysia'
import { Id } from '../../src/schemas/common'
import * as S from '../../src/schemas/routing'
import {
  createSharedVoicemailBox,
  deleteSharedVoicemailBox,
  getSharedVoicemailBox,
  listSharedVoicemailBoxes,
  sharedVoicemailBoxView,
  updateSharedVoicemailBox,
} from '../../src/services/routing/voicemail-boxes'
import type { GatewayDeps } from '../context'
import { accountLevel, op } from '../docs'
import { expandQuery, listEnvelope, listQuery, pageRequest } from '../plugins/lists'
import type { requestContext } from '../plugins/request-context'
import { expandExtensions } from './routing-expand'

const TAG = 'Shared Voicemail Boxes'
const params = t.Object({ shared_voicemail_box_id: Id('shared voicemail box ID') })
const expand = { 'expand[]': expandQuery('extensions') }
const rule = accountLevel()
const notFound = { 404: ['shared_voicemail_box_not_found' as const] }

export function sharedVoicemailBoxRoutes(deps: GatewayDeps, base: ReturnType<typeof requestContext>) {
  return new Elysia({ name: 'routes/shared-voicemail-boxes' })
    .use(base)
    .get(
      '/v1/shared_voicemail_boxes',
      async ({ auth, query, listContext }) => {
        const ctx = listContext(query)
        const page = await listSharedVoicemailBoxes(deps.db, auth.account!.id, pageRequest(ctx))
        const exts = await expandExtensions(deps.db, auth.account!.id, query, page.rows)
        return listEnvelope(ctx, page, (row) => ({ ...sharedVoicemailBoxView(row), ...exts(row.id) }))
      },
      {
        query: t.Object({ ...listQuery, ...expand }, { additionalProperties: false }),
        detail: op('listSharedVoicemailBoxes', { summary: 'List shared voicemail boxes', tag: TAG, auth: rule, list: S.SharedVoicemailBox }),
      },
    )
    .post(
      '/v1/shared_voicemail_boxes',
      ({ auth, body, mutate }) =>
        mutate(async (tx) => {
          const row = await createSharedVoicemailBox(tx, deps.clock, deps.routingCheck, auth.account!.id, body)
          return { resource: row.id, body: sharedVoicemailBoxView(row) }
        }),
      {
        body: S.CreateSharedVoicemailBoxRequest,
        detail: op('createSharedVoicemailBox', {
          summary: 'Create a shared voicemail box',
          description: 'users must be users of this account (details users.<index>).',
          tag: TAG,
          auth: rule,
          response: S.SharedVoicemailBox,
        }),
      },
    )
    .get(
      '/v1/shared_voicemail_boxes/:shared_voicemail_box_id',
      async ({ auth, params, query }) => {
        const row = await getSharedVoicemailBox(deps.db, auth.account!.id, params.shared_voicemail_box_id)
        const exts = await expandExtensions(deps.db, auth.account!.id, query, [row])
        return { ...sharedVoicemailBoxView(row), ...exts(row.id) }
      },
      {
        params,
        query: t.Object(expand, { additionalProperties: false }),
        detail: op('getSharedVoicemailBox', { summary: 'Get a shared voicemail box', tag: TAG, auth: rule, response: S.SharedVoicemailBox, errors: notFound }),
      },
    )
    .post(
      '/v1/shared_voicemail_boxes/:shared_voicemail_box_id',
      ({ auth, params, body, mutate }) =>
        mutate(async (tx) => {
          const row = await updateSharedVoicemailBox(tx, deps.clock, auth.account!.id, params.shared_voicemail_box_id, body)
          return { resource: row.id, body: sharedVoicemailBoxView(row) }
        }),
      {
        params,
        body: S.UpdateSharedVoicemailBoxRequest,
        detail: op('updateSharedVoicemailBox', {
          summary: 'Update a shared voicemail box',
          tag: TAG,
          auth: rule,
          response: S.SharedVoicemailBox,
          errors: notFound,
        }),
      },
    )
    .delete(
      '/v1/shared_voicemail_boxes/:shared_voicemail_box_id',
      async ({ auth, params, mutate }) => {
        let audioKeys: string[] = []
        const response = await mutate(async (tx) => {
          audioKeys = (await deleteSharedVoicemailBox(tx, deps.routingCheck, auth.account!.id, params.shared_voicemail_box_id)).audioKeys
          return {
            resource: params.shared_voicemail_box_id,
            body: { id: params.shared_voicemail_box_id, object: 'shared_voicemail_box' as const, deleted: true as const },
          }
        })
        // The greetings' audio is owed durably (the sweeper); removing it now only makes it go sooner.
        if (response.ok) for (const key of audioKeys) await deps.storage.delete(key)
        return response
      },
      {
        params,
        detail: op('deleteSharedVoicemailBox', {
          summary: 'Delete a shared voicemail box',
          description:
            'Refused with 409 routing_object_in_use while an extension, a phone number route or another routing object routes to it. ' +
            'Deletes the box’s voicemail greetings with their audio; messages left in the box stay, their shared_voicemail_box_id set to null.',
          tag: TAG,
          auth: rule,
          response: S.DeletedRoutingObject('shared_voicemail_box'),
          errors: { ...notFound, 409: ['routing_object_in_use'] },
        }),
      },
    )
}
