/** Extensions: dial codes of an account, addressed by their number. */
import { Elysia, t } from 'elysia'
import { Id } from '../../src/schemas/common'
import * as S from '../../src/schemas/routing'
import { createExtension, deleteExtension, extensionView, getExtension, listExtensions, updateExtension } from '../../src/services/routing/extensions'
import type { GatewayDeps } from '../context'
import { accountLevel, op } from '../docs'
import { listEnvelope, listQuery, pageRequest } from '../plugins/lists'
import type { requestContext } from '../plugins/request-context'

const TAG = 'Extensions'
const params = t.Object({ number: Id('the extension number') })
const rule = accountLevel()

export function extensionRoutes(deps: GatewayDeps, base: ReturnType<typeof requestContext>) {
  return new Elysia({ name: 'routes/extensions' })
    .use(base)
    .get(
      '/v1/extensions',
      async ({ auth, query, listContext }) => {
        const ctx = listContext(query)
        const page = await listExtensions(deps.db, auth.account!.id, { target: query.target }, pageRequest(ctx))
        return listEnvelope(ctx, page, extensionView)
      },
      {
        query: t.Object({ ...listQuery, target: t.Optional(Id('only extensions routing to this target')) }, { additionalProperties: false }),
        detail: op('listExtensions', { summary: 'List extensions', tag: TAG, auth: rule, list: S.Extension }),
      },
    )
    .post(
      '/v1/extensions',
      ({ auth, body, mutate }) =>
        mutate(async (tx) => {
          const account = auth.account!
          const row = await createExtension(tx, deps.clock, deps.routingCheck, { id: account.id, extensionLength: account.config.extension_length }, body)
          return { resource: row.id, body: extensionView(row) }
        }),
      {
        body: S.CreateExtensionRequest,
        detail: op('createExtension', {
          summary: 'Create an extension',
          description:
            'The number must have config.extension_length digits and be unused in the account (409 extension_exists); the target must be a routable resource of the account.',
          tag: TAG,
          auth: rule,
          response: S.Extension,
          errors: { 409: ['extension_exists'] },
        }),
      },
    )
    .get('/v1/extensions/:number', async ({ auth, params }) => extensionView(await getExtension(deps.db, auth.account!.id, params.number)), {
      params,
      detail: op('getExtension', { summary: 'Get an extension', tag: TAG, auth: rule, response: S.Extension, errors: { 404: ['extension_not_found'] } }),
    })
    .post(
      '/v1/extensions/:number',
      ({ auth, params, body, mutate }) =>
        mutate(async (tx) => {
          const row = await updateExtension(tx, deps.clock, deps.routingCheck, auth.account!.id, params.number, body)
          return { resource: row.id, body: extensionView(row) }
        }),
      {
        params,
        body: S.UpdateExtensionRequest,
        detail: op('updateExtension', {
          summary: 'Update an extension (target, status)',
          tag: TAG,
          auth: rule,
          response: S.Extension,
          errors: { 404: ['extension_not_found'] },
        }),
      },
    )
    .delete(
      '/v1/extensions/:number',
      ({ auth, params, mutate }) =>
        mutate(async (tx) => {
          const row = await getExtension(tx, auth.account!.id, params.number)
          await deleteExtension(tx, auth.account!.id, params.number)
          return { resource: row.id, body: { id: row.id, object: 'extension', number: row.number, deleted: true } }
        }),
      {
        params,
        detail: op('deleteExtension', {
          summary: 'Delete an extension',
          tag: TAG,
          auth: rule,
          response: t.Object({ id: t.String(), object: t.Literal('extension'), number: t.String(), deleted: t.Literal(true) }),
          errors: { 404: ['extension_not_found'] },
        }),
      },
    )
}
