/** Voice apps: hand a call to a program (webhook) or an AI agent; secret rotation. */
import { Elysia, t } from 'elysia'
import { Id } from '../../src/schemas/common'
import * as S from '../../src/schemas/routing'
import {
  createVoiceApp,
  deleteVoiceApp,
  getVoiceApp,
  listVoiceApps,
  rotateVoiceAppSecret,
  updateVoiceApp,
  voiceAppView,
} from '../../src/services/routing/voice-apps'
import type { GatewayDeps } from '../context'
import { accountLevel, op } from '../docs'
import { expandQuery, listEnvelope, listQuery, pageRequest } from '../plugins/lists'
import type { requestContext } from '../plugins/request-context'
import { expandExtensions } from './routing-expand'

const TAG = 'Voice Apps'
const params = t.Object({ voice_app_id: Id('voice app ID') })
const expand = { 'expand[]': expandQuery('extensions') }
const rule = accountLevel()
const notFound = { 404: ['voice_app_not_found' as const] }

export function voiceAppRoutes(deps: GatewayDeps, base: ReturnType<typeof requestContext>) {
  return new Elysia({ name: 'routes/voice-apps' })
    .use(base)
    .get(
      '/v1/voice-apps',
      async ({ auth, query, listContext }) => {
        const ctx = listContext(query)
        const page = await listVoiceApps(deps.db, auth.account!.id, pageRequest(ctx))
        const exts = await expandExtensions(deps.db, auth.account!.id, query, page.rows)
        return listEnvelope(ctx, page, (row) => ({ ...voiceAppView(row), ...exts(row.id) }))
      },
      {
        query: t.Object({ ...listQuery, ...expand }, { additionalProperties: false }),
        detail: op('listVoiceApps', { summary: 'List voice apps', tag: TAG, auth: rule, list: S.VoiceApp }),
      },
    )
    .post(
      '/v1/voice-apps',
      ({ auth, body, mutate }) =>
        mutate(async (tx) => {
          const row = await createVoiceApp(tx, deps.clock, deps.routingCheck, auth.account!.id, body)
          return { resource: row.id, body: voiceAppView(row, { secret: true }) }
        }),
      {
        body: S.CreateVoiceAppRequest,
        detail: op('createVoiceApp', {
          summary: 'Create a voice app',
          description:
            'A webhook app needs url; an ai_agent app needs ai_agent (an AI agent of this account). The answer is the only one, with rotate_secret, that shows secret.',
          tag: TAG,
          auth: rule,
          response: S.VoiceApp,
        }),
      },
    )
    .get(
      '/v1/voice-apps/:voice_app_id',
      async ({ auth, params, query }) => {
        const row = await getVoiceApp(deps.db, auth.account!.id, params.voice_app_id)
        const exts = await expandExtensions(deps.db, auth.account!.id, query, [row])
        return { ...voiceAppView(row), ...exts(row.id) }
      },
      {
        params,
        query: t.Object(expand, { additionalProperties: false }),
        detail: op('getVoiceApp', { summary: 'Get a voice app', tag: TAG, auth: rule, response: S.VoiceApp, errors: notFound }),
      },
    )
    .post(
      '/v1/voice-apps/:voice_app_id',
      ({ auth, params, body, mutate }) =>
        mutate(async (tx) => {
          const row = await updateVoiceApp(tx, deps.clock, deps.routingCheck, auth.account!.id, params.voice_app_id, body)
          return { resource: row.id, body: voiceAppView(row) }
        }),
      {
        params,
        body: S.UpdateVoiceAppRequest,
        detail: op('updateVoiceApp', {
          summary: 'Update a voice app',
          description:
            'Changing kind drops the other kind’s field. An app that a notify-mode dial plan node names cannot become an ai_agent app (validation_error naming the node).',
          tag: TAG,
          auth: rule,
          response: S.VoiceApp,
          errors: notFound,
        }),
      },
    )
    .delete(
      '/v1/voice-apps/:voice_app_id',
      ({ auth, params, mutate }) =>
        mutate(async (tx) => {
          await deleteVoiceApp(tx, deps.routingCheck, auth.account!.id, params.voice_app_id)
          return { resource: params.voice_app_id, body: { id: params.voice_app_id, object: 'voice_app' as const, deleted: true as const } }
        }),
      {
        params,
        detail: op('deleteVoiceApp', {
          summary: 'Delete a voice app',
          description: 'Refused with 409 routing_object_in_use while an extension, a phone number route, a dial plan node or another routing object names it.',
          tag: TAG,
          auth: rule,
          response: S.DeletedRoutingObject('voice_app'),
          errors: { ...notFound, 409: ['routing_object_in_use'] },
        }),
      },
    )
    .post(
      '/v1/voice-apps/:voice_app_id/rotate_secret',
      ({ auth, params, mutate }) =>
        mutate(async (tx) => {
          const row = await rotateVoiceAppSecret(tx, deps.clock, auth.account!.id, params.voice_app_id)
          return { resource: row.id, body: voiceAppView(row, { secret: true }) }
        }),
      {
        params,
        detail: op('rotateVoiceAppSecret', {
          summary: 'Rotate a voice app secret',
          description: 'The old secret stops signing at once; the answer shows the new one (its only appearance).',
          tag: TAG,
          auth: rule,
          response: S.VoiceApp,
          errors: notFound,
        }),
      },
    )
}
