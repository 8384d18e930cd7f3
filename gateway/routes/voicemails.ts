/** The spec's "Voicemails" group: the account's voicemails and their transcripts. */
import { Elysia, t } from 'elysia'
import * as S from '../../src/schemas/calls'
import { DateBound, Id } from '../../src/schemas/common'
import { callsByIds } from '../../src/services/calls/call-log'
import { deleteVoicemail, getVoicemail, listVoicemails, updateVoicemail, voicemailTranscriptView, voicemailView } from '../../src/services/calls/voicemails'
import { Deleted } from '../../src/schemas/common'
import { UpdateVoicemailRequest } from '../../src/schemas/media'
import { deleteThenRemoveBlob } from './media-helpers'
import type { GatewayDeps } from '../context'
import { accountLevel, op } from '../docs'
import { expandQuery, listEnvelope, listQuery, pageRequest } from '../plugins/lists'
import type { requestContext } from '../plugins/request-context'

const TAG = 'Voicemails'
const rule = accountLevel()
const params = t.Object({ voicemail_id: Id() })

export function voicemailRoutes(deps: GatewayDeps, base: ReturnType<typeof requestContext>) {
  return new Elysia({ name: 'routes/voicemails' })
    .use(base)
    .get(
      '/v1/voicemails',
      async ({ auth, query, listContext }) => {
        const ctx = listContext(query)
        const accountId = auth.account!.id
        const page = await listVoicemails(deps.db, accountId, query, pageRequest(ctx))
        const withCall = query['expand[]']?.includes('call')
        const byId = withCall
          ? await callsByIds(
              deps.db,
              accountId,
              page.rows.flatMap((r) => (r.callId ? [r.callId] : [])),
            )
          : undefined
        return listEnvelope(ctx, page, (row) => voicemailView(row, byId && { call: (row.callId && byId.get(row.callId)) || null }))
      },
      {
        query: t.Object(
          {
            ...listQuery,
            owner: t.Optional(Id('a user (their voicemails) or a shared voicemail box (the messages left in it)')),
            is_read: t.Optional(t.Boolean()),
            from_date: DateBound('voicemails left at or after'),
            'expand[]': expandQuery('call'),
          },
          { additionalProperties: false },
        ),
        detail: op('listVoicemails', { summary: 'List voicemails', tag: TAG, auth: rule, list: S.Voicemail }),
      },
    )
    .get(
      '/v1/voicemails/:voicemail_id',
      async ({ auth, params, query }) => {
        const accountId = auth.account!.id
        const row = await getVoicemail(deps.db, accountId, params.voicemail_id)
        if (!query['expand[]']?.includes('call')) return voicemailView(row)
        const call = row.callId ? (await callsByIds(deps.db, accountId, [row.callId])).get(row.callId) : undefined
        return voicemailView(row, { call: call ?? null })
      },
      {
        params,
        query: t.Object({ 'expand[]': expandQuery('call') }, { additionalProperties: false }),
        detail: op('getVoicemail', { summary: 'Get a voicemail', tag: TAG, auth: rule, response: S.Voicemail, errors: { 404: ['voicemail_not_found'] } }),
      },
    )
    .post(
      '/v1/voicemails/:voicemail_id',
      ({ auth, params, body, mutate }) =>
        mutate(async (tx) => {
          const row = await updateVoicemail(tx, deps.clock, auth.account!.id, params.voicemail_id, body)
          return { resource: row.id, body: voicemailView(row) }
        }),
      {
        params,
        body: UpdateVoicemailRequest,
        detail: op('updateVoicemail', {
          summary: 'Update a voicemail (mark it read or unread)',
          tag: TAG,
          auth: rule,
          response: S.Voicemail,
          errors: { 404: ['voicemail_not_found'] },
        }),
      },
    )
    .delete(
      '/v1/voicemails/:voicemail_id',
      ({ auth, params, mutate }) =>
        deleteThenRemoveBlob(deps, (setKey) =>
          mutate(async (tx) => {
            setKey(await deleteVoicemail(tx, auth.account!.id, params.voicemail_id))
            return { resource: params.voicemail_id, body: { id: params.voicemail_id, object: 'voicemail' as const, deleted: true as const } }
          }),
        ),
      {
        params,
        detail: op('deleteVoicemail', {
          summary: 'Delete a voicemail',
          description: 'Deletes the voicemail, its transcript and its audio.',
          tag: TAG,
          auth: rule,
          response: Deleted('voicemail'),
          errors: { 404: ['voicemail_not_found'] },
        }),
      },
    )
    .get(
      '/v1/voicemails/:voicemail_id/transcript',
      async ({ auth, params }) => voicemailTranscriptView(await getVoicemail(deps.db, auth.account!.id, params.voicemail_id)),
      {
        params,
        detail: op('getVoicemailTranscript', {
          summary: 'Get the transcript of a voicemail',
          description:
            'The message as text (and as one segment spoken by the caller), with its summary and sentiment. Until transcription completes (voicemail.transcription.complete) the answer is 200 with status processing, text null and segments empty, as for call transcripts; summary and sentiment stay null until voicemail.summary.complete. 404 voicemail_not_found when the voicemail is not the account’s.',
          tag: TAG,
          auth: rule,
          response: S.VoicemailTranscript,
          errors: { 404: ['voicemail_not_found'] },
        }),
      },
    )
}
