/** The spec's "User Profile" group: user-token routes about the signed-in user (/v1/me...). */
import { Elysia, t } from 'elysia'
import {
  admitPresence,
  COMMAND_MESSAGE,
  PRESENCE_KIND,
  presenceActivity,
  type PresenceCommandMessage,
  presenceStatusOf,
  readActorState,
  sendCommand,
  spawnInTx,
  type TimerRow,
} from '../../actors/client'
import { ValidationError } from '../../src/errors'
import { newId } from '../../src/ids'
import * as S from '../../src/schemas/accounts'
import { CallLog, DirectionFilter } from '../../src/schemas/calls'
import { DateBound } from '../../src/schemas/common'
import { callLogPage } from '../../src/services/calls/call-log'
import { directoryEntry, extensionsOfUsers, getUser, listDirectory } from '../../src/services/accounts/users'
import { presenceView } from '../../src/services/accounts/presence'
import type { GatewayDeps } from '../context'
import { op, userLevel } from '../docs'
import { signedInUser } from '../plugins/auth'
import { listEnvelope, listQuery, pageRequest } from '../plugins/lists'
import type { requestContext } from '../plugins/request-context'

export function userProfileRoutes(deps: GatewayDeps, base: ReturnType<typeof requestContext>) {
  return new Elysia({ name: 'routes/user-profile' })
    .use(base)
    .get(
      '/v1/me',
      async ({ auth }) => {
        const p = signedInUser(auth.principal)
        const user = await getUser(deps.db, p.accountId, p.userId)
        const exts = (await extensionsOfUsers(deps.db, p.accountId, [user.id])).get(user.id) ?? []
        return {
          id: user.id,
          object: 'user_profile',
          name: user.name,
          email: user.email,
          account: user.accountId,
          extensions: exts.map((e) => ({ number: e.number, status: e.status })),
          created_at: user.createdAt.toISOString(),
          updated_at: user.updatedAt.toISOString(),
        }
      },
      { detail: op('getMe', { summary: 'The signed-in user’s profile', tag: 'User Profile', auth: userLevel(), response: S.UserProfile }) },
    )
    .get(
      '/v1/me/calls',
      async ({ auth, query, listContext }) => {
        const p = signedInUser(auth.principal)
        const ctx = listContext(query)
        return listEnvelope(ctx, await callLogPage(deps.db, p.accountId, { ...query, user_id: p.userId }, pageRequest(ctx)), (v) => v)
      },
      {
        query: t.Object(
          { ...listQuery, direction: DirectionFilter, from_date: DateBound('calls started at or after'), to_date: DateBound('calls started up to') },
          { additionalProperties: false },
        ),
        detail: op('listMyCalls', { summary: 'The signed-in user’s calls', tag: 'User Profile', auth: userLevel(), list: CallLog }),
      },
    )
    .get(
      '/v1/me/directory',
      async ({ auth, query, listContext }) => {
        const p = signedInUser(auth.principal)
        const ctx = listContext(query)
        return listEnvelope(ctx, await listDirectory(deps.db, p.accountId, p.userId, pageRequest(ctx)), directoryEntry)
      },
      {
        query: t.Object(listQuery, { additionalProperties: false }),
        detail: op('listMyDirectory', {
          summary: 'Every other user of the account',
          description: 'DirectoryEntry records only (user and display_name), so that a softphone can show colleagues without reading their profiles.',
          tag: 'User Profile',
          auth: userLevel(),
          list: S.DirectoryEntry,
        }),
      },
    )
    .get(
      '/v1/me/presence',
      async ({ auth }) => {
        const p = signedInUser(auth.principal)
        const user = await getUser(deps.db, p.accountId, p.userId)
        return presenceView(presenceStatusOf(await readActorState(deps.db, PRESENCE_KIND, user.id), user.id, user.createdAt.toISOString()))
      },
      {
        detail: op('getMyPresence', {
          summary: 'The signed-in user’s presence',
          description: 'A user whose presence never changed reads offline (no registered device), status_text null, updated_at the user’s creation.',
          tag: 'User Profile',
          auth: userLevel(),
          response: S.PresenceStatus,
        }),
      },
    )
    .put(
      '/v1/me/presence',
      async ({ auth, body, mutate }) => {
        const p = signedInUser(auth.principal)
        const written: TimerRow[] = []
        const response = await mutate(async (tx) => {
          const user = await getUser(tx, p.accountId, p.userId)
          const at = deps.clock.now().toISOString()
          const state = await readActorState(tx, PRESENCE_KIND, user.id)
          const admission = admitPresence(state, user.id, body, at, user.createdAt.toISOString())
          if ('refused' in admission) throw new ValidationError({ [admission.refused.field]: admission.refused.reason })
          // A user's first change creates the actor, with the change in its input; the command is applied if the actor exists first.
          if (!state) written.push(await spawnInTx(tx, deps.clock, PRESENCE_KIND, user.id, admission.input))
          const message: PresenceCommandMessage = { type: COMMAND_MESSAGE, command_id: newId('command'), at, user_id: user.id, command: body }
          written.push(await sendCommand(tx, deps.clock, PRESENCE_KIND, user.id, message))
          return { resource: user.id, body: presenceView(admission.after) }
        })
        // Applied before the answer where this process reaches the actor, so that a GET after the PUT reads it.
        if (written.length > 0) await deps.actors?.wake(PRESENCE_KIND, p.userId, written).catch(() => {})
        return response
      },
      {
        body: S.PresenceUpdateRequest,
        detail: op('updateMyPresence', {
          summary: 'Set the signed-in user’s presence',
          description:
            'Sets the manual presence (available, dnd or away) and, optionally, status_text (omitted keeps it, null clears it). Answers the PresenceStatus as it will be: a user on a call stays on_call, and a user with no registered device stays offline, with the manual choice showing once neither holds. 400 validation_error: details.status when status is on_call or offline (set by the service only) or not a presence state, details.status_text when longer than 100 characters; nothing is stored then.',
          tag: 'User Profile',
          auth: userLevel(),
          response: S.PresenceStatus,
        }),
      },
    )
    .post(
      '/v1/me/presence/activity',
      async ({ auth, body }) => {
        const p = signedInUser(auth.principal)
        const seconds = body?.idle_timeout_seconds ?? S.DEFAULT_IDLE_TIMEOUT_SECONDS
        // Not audited, unlike the API's changes: a client reports activity every minute or so, a heartbeat rather than a change.
        const after = await deps.db.transaction(async (tx) => {
          const user = await getUser(tx, p.accountId, p.userId)
          const at = deps.clock.now().toISOString()
          const state = await readActorState(tx, PRESENCE_KIND, user.id)
          const report = presenceActivity(state, user.id, seconds, at, user.createdAt.toISOString())
          // As for PUT: a spawn already holding the report, and the report itself, land in either order with the same result.
          if (!state) await spawnInTx(tx, deps.clock, PRESENCE_KIND, user.id, report.input)
          await deps.actorMessages?.tell(tx, PRESENCE_KIND, user.id, report.event as { type: string } & Record<string, unknown>)
          return report.after
        })
        await deps.actors?.wake(PRESENCE_KIND, p.userId).catch(() => {})
        return presenceView(after)
      },
      {
        body: t.Optional(S.PresenceActivityRequest),
        detail: {
          ...op('reportMyActivity', {
            summary: 'Report the signed-in user’s activity (extension)',
            description: `Extension beyond the spec (x-extension): the spec's "away = idle timeout". A client the user is working in reports activity (every minute or so while the user is active); after idle_timeout_seconds (default ${S.DEFAULT_IDLE_TIMEOUT_SECONDS}, 0: off) without a report, call or presence change, an available user shows away, and the next report brings them back. A manual away or dnd is the user's and stays. Users whose clients never report have no idle timeout. Answers the PresenceStatus as it will be. Reports are not written to the audit log. 400 validation_error with details.idle_timeout_seconds when it is not an integer from 0 to 86400.`,
            tag: 'User Profile',
            auth: userLevel(),
            response: S.PresenceStatus,
          }),
          'x-extension': true,
        },
      },
    )
}
