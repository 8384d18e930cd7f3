/** Button templates: key layouts for a vendor (and optionally some of its models), and their buttons. */
import { Elysia, t } from 'elysia'
import { Deleted, Id } from '../../src/schemas/common'
import * as S from '../../src/schemas/devices'
import {
  buttonView,
  createButton,
  createTemplate,
  deleteButton,
  deleteTemplate,
  getTemplate,
  listButtons,
  listTemplates,
  templateForRequest,
  templateView,
  updateButton,
  updateTemplate,
} from '../../src/services/devices/buttons'
import type { GatewayDeps } from '../context'
import { accountLevel, op } from '../docs'
import { expandQuery, listEnvelope, listQuery, pageRequest } from '../plugins/lists'
import type { requestContext } from '../plugins/request-context'

const TAG = 'Button Templates'
const params = t.Object({ id: Id('button template ID') })
const buttonParams = t.Object({ id: Id('button template ID'), button_id: Id() })
const rule = accountLevel()
const notFound404 = { 404: ['button_template_not_found' as const] }
const buttonNotFound = { 404: ['button_template_not_found' as const, 'button_not_found' as const] }

export function buttonTemplateRoutes(deps: GatewayDeps, base: ReturnType<typeof requestContext>) {
  return new Elysia({ name: 'routes/button-templates' })
    .use(base)
    .get(
      '/v1/button_templates',
      async ({ auth, query, listContext }) => {
        const ctx = listContext(query)
        return listEnvelope(ctx, await listTemplates(deps.db, auth.account!.id, pageRequest(ctx)), (r) => templateView(r))
      },
      {
        query: t.Object(listQuery, { additionalProperties: false }),
        detail: op('listButtonTemplates', { summary: 'List button templates', tag: TAG, auth: rule, list: S.ButtonTemplate }),
      },
    )
    .post(
      '/v1/button_templates',
      ({ auth, body, mutate }) =>
        mutate(async (tx) => {
          const { template, buttons } = await createTemplate(tx, deps.clock, auth.account!.id, body)
          return { resource: template.id, body: templateView(template, { buttons }) }
        }),
      {
        body: S.CreateButtonTemplateRequest,
        detail: op('createButtonTemplate', {
          summary: 'Create a button template',
          description:
            'For one vendor (400 unsupported_vendor otherwise) and, optionally, some of its deskphone or handset models (none: all). Buttons may be given at once; each key at most the largest fitting model’s key count. The answer inlines the buttons.',
          tag: TAG,
          auth: rule,
          response: S.ButtonTemplate,
          errors: { 400: ['unsupported_vendor'] },
        }),
      },
    )
    .get(
      '/v1/button_templates/:id',
      async ({ auth, params, query }) => {
        const { template, buttons, compatible } = await templateForRequest(deps.db, auth.account!.id, params.id, {
          forDevice: query.for_device,
          withButtons: query['expand[]']?.includes('buttons') ?? false,
        })
        return templateView(template, { buttons, compatible })
      },
      {
        params,
        query: t.Object(
          {
            for_device: t.Optional(Id('a device of the account: adds compatible, and limits expanded buttons to the keys its model has')),
            'expand[]': expandQuery('buttons'),
          },
          { additionalProperties: false },
        ),
        detail: op('getButtonTemplate', { summary: 'Get a button template', tag: TAG, auth: rule, response: S.ButtonTemplate, errors: notFound404 }),
      },
    )
    .post(
      '/v1/button_templates/:id',
      ({ auth, params, body, mutate }) =>
        mutate(async (tx) => {
          const row = await updateTemplate(tx, deps.clock, auth.account!.id, params.id, body)
          return { resource: row.id, body: templateView(row) }
        }),
      {
        params,
        body: S.UpdateButtonTemplateRequest,
        detail: op('updateButtonTemplate', {
          summary: 'Update a button template (name, models)',
          description: 'Models that would leave out a device using the template are 409 button_template_in_use. The vendor is fixed.',
          tag: TAG,
          auth: rule,
          response: S.ButtonTemplate,
          errors: { 404: ['button_template_not_found'], 409: ['button_template_in_use'] },
        }),
      },
    )
    .delete(
      '/v1/button_templates/:id',
      ({ auth, params, mutate }) =>
        mutate(async (tx) => {
          await deleteTemplate(tx, auth.account!.id, params.id)
          return { resource: params.id, body: { id: params.id, object: 'button_template', deleted: true } }
        }),
      {
        params,
        detail: op('deleteButtonTemplate', {
          summary: 'Delete a button template',
          description: 'A template used by a device or as the account default_button_template is 409 button_template_in_use.',
          tag: TAG,
          auth: rule,
          response: Deleted('button_template'),
          errors: { 404: ['button_template_not_found'], 409: ['button_template_in_use'] },
        }),
      },
    )
    .get(
      '/v1/button_templates/:id/buttons',
      async ({ auth, params, query, listContext }) => {
        await getTemplate(deps.db, auth.account!.id, params.id)
        const ctx = listContext(query)
        return listEnvelope(ctx, await listButtons(deps.db, params.id, pageRequest(ctx)), buttonView)
      },
      {
        params,
        query: t.Object(listQuery, { additionalProperties: false }),
        detail: op('listButtonTemplateButtons', { summary: 'List a template’s buttons', tag: TAG, auth: rule, list: S.Button, errors: notFound404 }),
      },
    )
    .post(
      '/v1/button_templates/:id/buttons',
      ({ auth, params, body, mutate }) =>
        mutate(async (tx) => {
          const row = await createButton(tx, deps, auth.account!.id, params.id, body)
          return { resource: params.id, body: buttonView(row) }
        }),
      {
        params,
        body: S.ButtonInput,
        detail: op('createButtonTemplateButton', {
          summary: 'Add a button to a template',
          description:
            'A key beyond the largest fitting model’s keys is 400 (details.key); a key in use is 409 button_key_taken. Devices using the template go back to pending_sync.',
          tag: TAG,
          auth: rule,
          response: S.Button,
          errors: { 404: ['button_template_not_found'], 409: ['button_key_taken'] },
        }),
      },
    )
    .post(
      '/v1/button_templates/:id/buttons/:button_id',
      ({ auth, params, body, mutate }) =>
        mutate(async (tx) => {
          const row = await updateButton(tx, deps, auth.account!.id, params.id, params.button_id, body)
          return { resource: params.id, body: buttonView(row) }
        }),
      {
        params: buttonParams,
        body: S.UpdateButtonRequest,
        detail: op('updateButtonTemplateButton', {
          summary: 'Update a template button',
          tag: TAG,
          auth: rule,
          response: S.Button,
          errors: { 404: ['button_template_not_found', 'button_not_found'], 409: ['button_key_taken'] },
        }),
      },
    )
    .delete(
      '/v1/button_templates/:id/buttons/:button_id',
      ({ auth, params, mutate }) =>
        mutate(async (tx) => {
          await deleteButton(tx, deps, auth.account!.id, params.id, params.button_id)
          return { resource: params.id, body: { id: params.button_id, object: 'button', deleted: true } }
        }),
      {
        params: buttonParams,
        detail: op('deleteButtonTemplateButton', {
          summary: 'Delete a template button',
          tag: TAG,
          auth: rule,
          response: Deleted('button'),
          errors: buttonNotFound,
        }),
      },
    )
}
