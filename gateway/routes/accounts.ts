/** Accounts, their pricing and their subscription agreement (platform-level). */
import { Elysia, t } from 'elysia'
import { Deleted, Id } from '../../src/schemas/common'
import * as S from '../../src/schemas/accounts'
import {
  accountExtras,
  accountResource,
  accountView,
  createAccount,
  deleteAccount,
  getAccountFor,
  listAccounts,
  updateAccount,
  type AccountRow,
} from '../../src/services/accounts/accounts'
import type { Principal } from '../../src/services/platform/principal'
import { agreePricing, effectivePricing, latestPricing, pricingView } from '../../src/services/accounts/pricing'
import { acceptanceView, acceptTos, currentAcceptance, TOS_BODY, TOS_CONTENT, TOS_VERSION, tosUrl } from '../../src/services/accounts/tos'
import { ApiError, forbidden } from '../../src/errors'
import type { Db } from '../../src/db/client'
import type { GatewayDeps } from '../context'
import { aboutAccount, op, platformLevel } from '../docs'
import { listEnvelope, listQuery, pageRequest } from '../plugins/lists'
import type { requestContext } from '../plugins/request-context'
import { expandQuery } from '../plugins/lists'

const TAG = 'Accounts'
const params = t.Object({ account_id: Id() })
const aboutThisAccount = aboutAccount()

export function accountRoutes(deps: GatewayDeps, base: ReturnType<typeof requestContext>) {
  /** The path's account: a session's own (checked by auth), or one of the key's platform in its mode. */
  const target = (db: Db, auth: { principal: Principal; account?: AccountRow }, id: string) =>
    auth.account ? Promise.resolve(auth.account) : getAccountFor(db, auth.principal, id)

  const tosView = async (db: Db, account: AccountRow, expand: string[] | undefined) => {
    const acceptance = await currentAcceptance(db, account.id)
    const view: Record<string, unknown> = {
      object: 'account_tos',
      account: account.id,
      version: TOS_VERSION,
      url: tosUrl(deps.config.baseUrl),
      content: TOS_CONTENT,
      body: TOS_BODY,
      acceptance: acceptanceView(acceptance),
    }
    if (expand?.includes('pricing')) {
      const pricing = await latestPricing(db, account.id)
      view.pricing = pricing ? pricingView(pricing) : null
    }
    return view
  }

  return new Elysia({ name: 'routes/accounts' })
    .use(base)
    .get(
      '/v1/accounts',
      async ({ auth, query, listContext }) => {
        const ctx = listContext(query)
        const page = await listAccounts(deps.db, auth.principal, pageRequest(ctx))
        const extras = await accountExtras(deps.db, page.rows)
        return listEnvelope(ctx, page, (row) => accountView(row, extras.get(row.id)!))
      },
      {
        query: t.Object(listQuery, { additionalProperties: false }),
        detail: op('listAccounts', { summary: 'List accounts of the platform in the key’s mode', tag: TAG, auth: platformLevel(), list: S.Account }),
      },
    )
    .post(
      '/v1/accounts',
      ({ auth, body, mutate }) =>
        mutate(async (tx) => {
          const p = auth.principal
          if (p.kind !== 'secret_key') throw forbidden('Only a platform secret key can create accounts.')
          const row = await createAccount(tx, deps, p, body)
          return { resource: row.id, accountId: row.id, body: await accountResource(tx, row) }
        }),
      {
        body: S.CreateAccountRequest,
        detail: op('createAccount', {
          summary: 'Create an account (mode follows the key)',
          description:
            'The address becomes the main location and the pricing is stored, in one transaction with the account. A live key creates a live account, only when live mode is enabled on the platform (else 403 live_mode_disabled).',
          tag: TAG,
          auth: platformLevel(),
          response: S.Account,
          errors: { 403: ['live_mode_disabled'] },
        }),
      },
    )
    .get('/v1/accounts/:account_id', async ({ auth, params }) => accountResource(deps.db, await target(deps.db, auth, params.account_id)), {
      params,
      detail: op('getAccount', {
        summary: 'Get an account',
        tag: TAG,
        auth: aboutThisAccount,
        response: S.Account,
        errors: { 404: ['account_not_found'] },
      }),
    })
    .post(
      '/v1/accounts/:account_id',
      ({ auth, params, body, mutate }) =>
        mutate(async (tx) => {
          const account = await target(tx, auth, params.account_id)
          const row = await updateAccount(tx, deps, account, body)
          return { resource: row.id, body: await accountResource(tx, row) }
        }),
      {
        params,
        body: S.UpdateAccountRequest,
        detail: op('updateAccount', {
          summary: 'Update an account',
          description:
            'Omitted fields are unchanged. email: null or "" clears it. main_location cannot be cleared, only swapped to another active location of the account. default_outbound_did, hold_music_clip, default_button_template and billing_address: null clears.',
          tag: TAG,
          auth: platformLevel(),
          response: S.Account,
          errors: { 404: ['account_not_found'] },
        }),
      },
    )
    .delete(
      '/v1/accounts/:account_id',
      ({ auth, params, mutate }) =>
        mutate(async (tx) => {
          const account = await target(tx, auth, params.account_id)
          await deleteAccount(tx, account.id)
          return { resource: account.id, accountId: account.id, body: { id: account.id, object: 'account', deleted: true } }
        }),
      {
        params,
        detail: op('deleteAccount', {
          summary: 'Delete an account (irreversible)',
          description: 'Removes the account with its users, extensions, locations, pricing and agreement records. Sends no billable-count events.',
          tag: TAG,
          auth: platformLevel(),
          response: Deleted('account'),
          errors: { 404: ['account_not_found'] },
        }),
      },
    )
    .get(
      '/v1/accounts/:account_id/pricing',
      async ({ auth, params }) => {
        const account = await target(deps.db, auth, params.account_id)
        const pricing = await latestPricing(deps.db, account.id)
        if (!pricing) throw new ApiError(404, 'No pricing has been agreed for this account.', 'pricing_not_found')
        return pricingView(pricing)
      },
      {
        params,
        detail: op('getAccountPricing', {
          summary: 'Get the latest agreed pricing',
          tag: TAG,
          auth: aboutThisAccount,
          response: S.AccountPricingResponse,
          errors: { 404: ['account_not_found', 'pricing_not_found'] },
        }),
      },
    )
    .post(
      '/v1/accounts/:account_id/pricing',
      ({ auth, params, body, mutate }) =>
        mutate(async (tx) => {
          const account = await target(tx, auth, params.account_id)
          const first = (await latestPricing(tx, account.id)) === undefined
          const row = await agreePricing(tx, deps.clock, account.id, body, first)
          return { resource: account.id, body: pricingView(row) }
        }),
      {
        params,
        body: S.AccountPricing,
        detail: op('upsertAccountPricing', {
          summary: 'Create or replace the account pricing',
          description:
            'All three rates are required. The change takes effect at the start of the next month (UTC); until then effective pricing shows it as next.',
          tag: TAG,
          auth: platformLevel(),
          response: S.AccountPricingResponse,
          errors: { 404: ['account_not_found'] },
        }),
      },
    )
    .get(
      '/v1/accounts/:account_id/effective-pricing',
      async ({ auth, params }) => effectivePricing(deps.db, deps.clock, (await target(deps.db, auth, params.account_id)).id),
      {
        params,
        detail: op('getAccountEffectivePricing', {
          summary: 'Get the pricing in force today',
          tag: TAG,
          auth: aboutThisAccount,
          response: S.EffectivePricing,
          errors: { 404: ['account_not_found'] },
        }),
      },
    )
    .get(
      '/v1/accounts/:account_id/tos',
      async ({ auth, params, query }) => tosView(deps.db, await target(deps.db, auth, params.account_id), query['expand[]']),
      {
        params,
        query: t.Object({ 'expand[]': expandQuery('pricing') }, { additionalProperties: false }),
        detail: op('getAccountTos', {
          summary: 'Get the subscription agreement',
          tag: TAG,
          auth: aboutThisAccount,
          response: S.AccountTos,
          errors: { 404: ['account_not_found'] },
        }),
      },
    )
    .post(
      '/v1/accounts/:account_id/tos',
      ({ auth, params, body, mutate, ip, request }) =>
        mutate(async (tx) => {
          const account = await target(tx, auth, params.account_id)
          const userAgent = request.headers.get('user-agent')?.slice(0, 512) ?? null
          await acceptTos(tx, deps.clock, account.id, { version: body.version, ip, userAgent })
          return { resource: account.id, body: await tosView(tx, account, undefined) }
        }),
      {
        params,
        body: S.TosAcceptRequest,
        detail: op('acceptAccountTos', {
          summary: 'Accept the subscription agreement',
          description:
            'Needs the agreement_acceptance capability (platform secret key, or an account session with that component). The version must be the current one (409 tos_version_stale); pricing must be agreed first (422 pricing_required). Re-accepting the same version returns the first acceptance. The ip, user agent and timestamp are taken from the request; the pricing is snapshotted.',
          tag: TAG,
          auth: aboutAccount(),
          response: S.AccountTos,
          errors: { 404: ['account_not_found'], 409: ['tos_version_stale'], 422: ['pricing_required'] },
        }),
      },
    )
}
