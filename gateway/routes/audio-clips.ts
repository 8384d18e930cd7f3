/** The spec's "Audio Clips" group: uploaded audio converted to what telephony plays. */
import { Elysia, t } from 'elysia'
import { Deleted, Id } from '../../src/schemas/common'
import * as S from '../../src/schemas/media'
import { audioClipView, createAudioClip, deleteAudioClip, getAudioClip, listAudioClips, updateAudioClip } from '../../src/services/media/audio-clips'
import { ValidationError } from '../../src/errors'
import type { GatewayDeps } from '../context'
import { accountLevel, op } from '../docs'
import { listEnvelope, listQuery, pageRequest } from '../plugins/lists'
import type { requestContext } from '../plugins/request-context'
import { onlyFields, requireFile, textField, withUploadBody } from '../uploads'
import { audioConverter, deleteThenRemoveBlob, signing } from './media-helpers'

const TAG = 'Audio Clips'
const rule = accountLevel()
const params = t.Object({ audio_clip_id: Id('audio clip ID') })
const notFound = { 404: ['audio_clip_not_found' as const] }

export function audioClipRoutes(deps: GatewayDeps, base: ReturnType<typeof requestContext>) {
  return new Elysia({ name: 'routes/audio-clips' })
    .use(base)
    .get(
      '/v1/audio_clips',
      async ({ auth, query, listContext }) => {
        const ctx = listContext(query)
        const page = await listAudioClips(deps.db, auth.account!.id, pageRequest(ctx))
        const sign = signing(deps)
        return listEnvelope(ctx, page, (row) => audioClipView(row, sign))
      },
      {
        query: t.Object(listQuery, { additionalProperties: false }),
        detail: op('listAudioClips', { summary: 'List audio clips', tag: TAG, auth: rule, list: S.AudioClip }),
      },
    )
    .post(
      '/v1/audio_clips',
      ({ auth, body, mutate }) => {
        onlyFields(body, ['name'])
        const file = requireFile(body)
        const name = textField(body, 'name') ?? null
        if (name !== null && (name.length === 0 || name.length > 255)) throw new ValidationError({ name: 'must be 1 to 255 characters' })
        const convert = audioConverter(deps)
        return mutate(async (tx) => {
          const row = await createAudioClip(tx, { clock: deps.clock, storage: deps.storage, convert }, auth.account!.id, { name, file })
          return { resource: row.id, body: audioClipView(row, signing(deps)) }
        })
      },
      {
        detail: withUploadBody(
          op('createAudioClip', {
            summary: 'Upload an audio clip',
            description:
              'multipart/form-data with the audio in a part named `file` and an optional `name` (1 to 255 characters), or the audio itself as the body with an audio/* Content-Type (no name; set it with updateAudioClip). WAV (PCM 8, 16, 24 or 32-bit, or 32-bit float; any rate; any channel count) and MP3 are accepted, recognised by their bytes, at most 3 MiB and 600 seconds. The clip is stored as 8 kHz mono 16-bit PCM WAV and its duration is measured from the decoded audio. A file that is empty, not audio, in an unsupported encoding, unreadable, too long or too large is refused with 400 validation_error, details.file giving the reason (empty, not_audio, unsupported_encoding, corrupt, too_long, or the size limit), and nothing is stored.',
            tag: TAG,
            auth: rule,
            response: S.AudioClip,
          }),
          { name: { type: 'string', description: 'clip name, 1 to 255 characters' } },
          [],
          true,
        ),
      },
    )
    .get(
      '/v1/audio_clips/:audio_clip_id',
      async ({ auth, params }) => audioClipView(await getAudioClip(deps.db, auth.account!.id, params.audio_clip_id), signing(deps)),
      {
        params,
        detail: op('getAudioClip', { summary: 'Get an audio clip (with a fresh download URL)', tag: TAG, auth: rule, response: S.AudioClip, errors: notFound }),
      },
    )
    .post(
      '/v1/audio_clips/:audio_clip_id',
      ({ auth, params, body, mutate }) =>
        mutate(async (tx) => {
          const row = await updateAudioClip(tx, deps.clock, auth.account!.id, params.audio_clip_id, body)
          return { resource: row.id, body: audioClipView(row, signing(deps)) }
        }),
      {
        params,
        body: S.UpdateAudioClipRequest,
        detail: op('updateAudioClip', {
          summary: 'Update an audio clip',
          description: 'Renames the clip (null clears the name). To change the audio, upload a new clip.',
          tag: TAG,
          auth: rule,
          response: S.AudioClip,
          errors: notFound,
        }),
      },
    )
    .delete(
      '/v1/audio_clips/:audio_clip_id',
      ({ auth, params, mutate }) =>
        deleteThenRemoveBlob(deps, (setKey) =>
          mutate(async (tx) => {
            setKey(await deleteAudioClip(tx, auth.account!.id, params.audio_clip_id))
            return { resource: params.audio_clip_id, body: { id: params.audio_clip_id, object: 'audio_clip' as const, deleted: true as const } }
          }),
        ),
      {
        params,
        detail: op('deleteAudioClip', {
          summary: 'Delete an audio clip',
          description:
            'Deletes the clip and its stored audio. Refused with 409 audio_clip_in_use while the account’s hold_music_clip or a dial plan node plays it.',
          tag: TAG,
          auth: rule,
          response: Deleted('audio_clip'),
          errors: { ...notFound, 409: ['audio_clip_in_use'] },
        }),
      },
    )
}
