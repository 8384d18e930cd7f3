/** Voicemail greetings (the spec's "Voicemails" group): GET, POST (upload) and DELETE per owner and type. */
import { Elysia, t } from 'elysia'
import { Id } from '../../src/schemas/common'
import * as S from '../../src/schemas/media'
import { deleteGreeting, type GreetingType, getGreeting, greetingView, setGreeting } from '../../src/services/media/voicemail-greetings'
import type { GatewayDeps } from '../context'
import { accountLevel, op } from '../docs'
import type { requestContext } from '../plugins/request-context'
import { onlyFields, requireFile, withUploadBody } from '../uploads'
import { audioConverter, deleteThenRemoveBlob, signing } from './media-helpers'

const TAG = 'Voicemails'
const rule = accountLevel()
const params = t.Object({
  owner: Id('a user or shared voicemail box of the account'),
  type: t.String({ maxLength: 11, pattern: `^(${S.GREETING_TYPES.join('|')})$`, description: S.GreetingType.description }),
})
/** The path's type, narrowed (the pattern above admits only these). */
const typeOf = (p: { type: string }) => p.type as GreetingType
const PATH = '/v1/voicemail_greetings/:owner/:type'
const ownerMissing = ['voicemail_owner_not_found' as const]

export function voicemailGreetingRoutes(deps: GatewayDeps, base: ReturnType<typeof requestContext>) {
  return new Elysia({ name: 'routes/voicemail-greetings' })
    .use(base)
    .get(PATH, async ({ auth, params }) => greetingView(await getGreeting(deps.db, auth.account!.id, params.owner, typeOf(params)), signing(deps)), {
      params,
      detail: op('getVoicemailGreeting', {
        summary: 'Get a voicemail greeting',
        description: '404 voicemail_greeting_not_found when the owner has no greeting of this type (callers hear the default prompt).',
        tag: TAG,
        auth: rule,
        response: S.VoicemailGreeting,
        errors: { 404: [...ownerMissing, 'voicemail_greeting_not_found'] },
      }),
    })
    .post(
      PATH,
      async ({ auth, params, body, mutate }) => {
        onlyFields(body, [])
        const file = requireFile(body)
        const convert = audioConverter(deps)
        let replacedKey: string | undefined
        const response = await mutate(async (tx) => {
          const set = await setGreeting(tx, { clock: deps.clock, storage: deps.storage, convert }, auth.account!.id, params.owner, typeOf(params), file)
          replacedKey = set.replacedKey
          return { resource: set.row.id, body: greetingView(set.row, signing(deps)) }
        })
        if (replacedKey && response.ok) await deps.storage.delete(replacedKey)
        return response
      },
      {
        params,
        detail: withUploadBody(
          op('setVoicemailGreeting', {
            summary: 'Upload a voicemail greeting',
            description:
              'Sets or replaces the owner’s greeting of this type. The audio goes through the same checks and conversion as audio clips (WAV or MP3, at most 3 MiB and 600 seconds, stored as 8 kHz mono 16-bit PCM WAV): multipart/form-data with a part named `file`, or the audio itself with an audio/* Content-Type. A refused upload (400 validation_error, details.file) leaves the previous greeting in place.',
            tag: TAG,
            auth: rule,
            response: S.VoicemailGreeting,
            errors: { 404: ownerMissing },
          }),
          {},
          [],
          true,
        ),
      },
    )
    .delete(
      PATH,
      ({ auth, params, mutate }) =>
        deleteThenRemoveBlob(deps, (setKey) =>
          mutate(async (tx) => {
            setKey(await deleteGreeting(tx, auth.account!.id, params.owner, typeOf(params)))
            return {
              resource: `${params.owner}/${typeOf(params)}`,
              body: { object: 'voicemail_greeting' as const, owner: params.owner, type: typeOf(params), deleted: true as const },
            }
          }),
        ),
      {
        params,
        detail: op('deleteVoicemailGreeting', {
          summary: 'Delete a voicemail greeting',
          description: 'Callers hear the default prompt again.',
          tag: TAG,
          auth: rule,
          response: S.DeletedVoicemailGreeting,
          errors: { 404: [...ownerMissing, 'voicemail_greeting_not_found'] },
        }),
      },
    )
}
