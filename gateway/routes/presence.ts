/**
 * The spec's "Presence" reads for a platform (secret key with Service-Account):
 * several users' presence, and one user's. The signed-in user's own presence is in
 * user-profile.ts (/v1/me/presence). Each user's presence is its presence actor's
 * persisted state, read in one query per page; what it shows is the presence
 * machine's to say (actors/client: presenceStatusOf).
 */
import { Elysia, t } from 'elysia'
import { PRESENCE_KIND, presenceStatusOf, readActorState } from '../../actors/client'
import * as S from '../../src/schemas/accounts'
import { Id } from '../../src/schemas/common'
import { PRESENCE_USERS_MAX, presenceStates, presenceUser, presenceUsersPage, presenceView } from '../../src/services/accounts/presence'
import type { UserRow } from '../../src/services/accounts/users'
import type { GatewayDeps } from '../context'
import { accountLevel, op } from '../docs'
import { listEnvelope, listQuery, pageRequest } from '../plugins/lists'
import type { requestContext } from '../plugins/request-context'

const TAG = 'Presence'
const rule = accountLevel()

export function presenceRoutes(deps: GatewayDeps, base: ReturnType<typeof requestContext>) {
  return new Elysia({ name: 'routes/presence' })
    .use(base)
    .get(
      '/v1/presence',
      async ({ auth, query, listContext }) => {
        const ctx = listContext(query)
        const page = await presenceUsersPage(deps.db, auth.account!.id, query['user[]'], pageRequest(ctx))
        const states = await presenceStates(
          deps.db,
          PRESENCE_KIND,
          page.rows.map((u) => u.id),
        )
        return listEnvelope(ctx, page, (u: UserRow) => presenceView(presenceStatusOf(states.get(u.id), u.id, u.createdAt.toISOString())))
      },
      {
        query: t.Object(
          {
            ...listQuery,
            'user[]': t.Optional(
              t.Array(Id(), {
                minItems: 1,
                maxItems: PRESENCE_USERS_MAX,
                description: `only these users (at most ${PRESENCE_USERS_MAX}); each must be a user of the account`,
              }),
            ),
          },
          { additionalProperties: false },
        ),
        detail: op('listPresence', {
          summary: 'Presence of several users',
          description: `The PresenceStatus of every user of the account, or of the users named by user[] (repeatable, at most ${PRESENCE_USERS_MAX}), newest user first, paginated as every list (limit 1 to 100, default 10: ask limit=100 to have up to 100 named users on one page). A user[] that is not a user of the account (unknown, or another account's) is refused with 400 validation_error naming user[], rather than silently left out.`,
          tag: TAG,
          auth: rule,
          list: S.PresenceStatus,
        }),
      },
    )
    .get(
      '/v1/users/:user_id/presence',
      async ({ auth, params }) => {
        const user = await presenceUser(deps.db, auth.account!.id, params.user_id)
        return presenceView(presenceStatusOf(await readActorState(deps.db, PRESENCE_KIND, user.id), user.id, user.createdAt.toISOString()))
      },
      {
        params: t.Object({ user_id: Id() }),
        detail: op('getUserPresence', {
          summary: 'A user’s presence',
          tag: TAG,
          auth: rule,
          response: S.PresenceStatus,
          errors: { 404: ['user_not_found'] },
        }),
      },
    )
}
