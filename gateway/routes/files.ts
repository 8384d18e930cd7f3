/** POST /v1/files (the spec's "Faxes, Files, Hardware Orders" group): uploads kept as sent. */
import { Elysia } from 'elysia'
import { ValidationError } from '../../src/errors'
import * as S from '../../src/schemas/media'
import { createFile, type FilePurpose, fileView } from '../../src/services/media/files'
import type { GatewayDeps } from '../context'
import { accountLevel, op } from '../docs'
import type { requestContext } from '../plugins/request-context'
import { onlyFields, requireFile, textField, withUploadBody } from '../uploads'
import { audioConverter, signing } from './media-helpers'

const rule = accountLevel()

export function fileRoutes(deps: GatewayDeps, base: ReturnType<typeof requestContext>) {
  return new Elysia({ name: 'routes/files' }).use(base).post(
    '/v1/files',
    ({ auth, body, mutate }) => {
      onlyFields(body, ['purpose'])
      const purpose = textField(body, 'purpose')
      const problems: Record<string, string> = {}
      if (purpose === undefined) problems.purpose = `is required: one of ${S.FILE_PURPOSES.join(', ')}`
      else if (!(S.FILE_PURPOSES as readonly string[]).includes(purpose)) problems.purpose = `must be one of ${S.FILE_PURPOSES.join(', ')}`
      if (Object.keys(problems).length > 0) throw new ValidationError(problems)
      const file = requireFile(body)
      const convert = audioConverter(deps)
      return mutate(async (tx) => {
        const row = await createFile(tx, { clock: deps.clock, storage: deps.storage, convert }, auth.account!.id, { purpose: purpose as FilePurpose, file })
        return { resource: row.id, body: fileView(row, signing(deps)) }
      })
    },
    {
      detail: withUploadBody(
        op('uploadFile', {
          summary: 'Upload a file',
          description:
            'multipart/form-data with the file in a part named `file` and its `purpose`: audio (WAV or MP3, checked by decoding it) or fax_document (PDF or TIFF, recognised by its bytes). At most 3 MiB. The file is kept as sent; the answer carries a signed download URL. An empty file, a file that is not what its purpose says, or one over the limit is refused with 400 validation_error (details.file) and nothing is stored.',
          tag: 'Files',
          auth: rule,
          response: S.File,
        }),
        { purpose: { type: 'string', description: 'what the file is for', enum: [...S.FILE_PURPOSES] } },
        ['purpose'],
        false,
      ),
    },
  )
}
