/** Account sessions and user sessions: minted with a platform secret key only. */
import { Elysia, t } from 'elysia'
import { ValidationError, forbidden, notFound } from '../../src/errors'
import { Id } from '../../src/schemas/common'
import * as S from '../../src/schemas/platform'
import { getAccountFor } from '../../src/services/accounts/accounts'
import { findUserById, getUser, revokeUserSessions } from '../../src/services/accounts/users'
import type { GatewayDeps } from '../context'
import { accountLevel, op, platformLevel } from '../docs'
import type { requestContext } from '../plugins/request-context'

const TAG = 'Sessions'

export function sessionRoutes(deps: GatewayDeps, base: ReturnType<typeof requestContext>) {
  return new Elysia({ name: 'routes/sessions' })
    .use(base)
    .post(
      '/v1/account_sessions',
      ({ auth, body, mutate }) =>
        mutate(async (tx) => {
          const enabled = S.SESSION_COMPONENTS.filter((c) => body.components[c]?.enabled === true)
          if (enabled.length === 0) throw new ValidationError({ components: 'at least one component must be enabled' })
          const p = auth.principal
          if (p.kind !== 'secret_key') throw forbidden('Only a platform secret key can create sessions.')
          const account = await getAccountFor(tx, p, body.account)
          const minted = await deps.tokens.mintAccountSession({ accountId: account.id, platformId: p.platformId, mode: p.mode, components: enabled })
          return {
            resource: minted.sessionId,
            accountId: account.id,
            body: {
              object: 'account_session',
              account: account.id,
              client_secret: minted.token,
              expires_at: minted.expiresAt.toISOString(),
              components: Object.fromEntries(S.SESSION_COMPONENTS.map((c) => [c, { enabled: enabled.includes(c) }])),
            },
          }
        }),
      {
        body: S.CreateAccountSessionRequest,
        detail: op('createAccountSession', {
          summary: 'Create an account session (1 hour)',
          description:
            'Components grant the holder their capability: call_logs, voicemails, account_onboarding, agreement_acceptance. Needs a platform secret key; session tokens cannot create sessions.',
          tag: TAG,
          auth: platformLevel(),
          response: S.AccountSession,
          errors: { 404: ['account_not_found'] },
        }),
      },
    )
    .post(
      '/v1/user_sessions',
      ({ auth, body, mutate }) =>
        mutate(async (tx) => {
          const p = auth.principal
          if (p.kind !== 'secret_key') throw forbidden('Only a platform secret key can create sessions.')
          // The user must belong to an account of this platform, in the key's mode; any
          // other user is as good as absent to this caller.
          const found = await findUserById(tx, body.user)
          if (!found) throw notFound('user', body.user)
          const account = await getAccountFor(tx, p, found.accountId).catch(() => {
            throw notFound('user', body.user)
          })
          const user = await getUser(tx, account.id, body.user)
          const minted = await deps.tokens.mintUserSession({
            accountId: account.id,
            platformId: p.platformId,
            mode: p.mode,
            userId: user.id,
            epoch: user.sessionEpoch,
            ttlSeconds: body.ttl_seconds,
          })
          return {
            resource: user.id,
            accountId: account.id,
            body: { object: 'user_session', account: account.id, user: user.id, client_secret: minted.token, expires_at: minted.expiresAt.toISOString() },
          }
        }),
      {
        body: S.CreateUserSessionRequest,
        detail: op('createUserSession', {
          summary: 'Create a user session (user token)',
          description:
            'The token reaches /v1/me/* and the signalling channel only. Lifetime ttl_seconds, default 86400 (24 h), at most 604800 (7 days); renew by minting a new one.',
          tag: TAG,
          auth: platformLevel(),
          response: S.UserSession,
          errors: { 404: ['user_not_found'] },
        }),
      },
    )
    .post(
      '/v1/users/:user_id/revoke_sessions',
      ({ auth, params, mutate }) =>
        mutate(async (tx) => ({ resource: params.user_id, body: await revokeUserSessions(tx, deps.clock, auth.account!.id, params.user_id) })),
      {
        params: t.Object({ user_id: Id() }),
        detail: op('revokeUserSessions', {
          summary: 'Revoke every outstanding user session of a user',
          tag: 'Users',
          auth: accountLevel(),
          response: S.RevokeSessionsResponse,
          errors: { 404: ['user_not_found'] },
        }),
      },
    )
}
