/** Call logs, transcripts, voicemails, and the sandbox call simulator. */
import { and, eq } from 'drizzle-orm'
import { Elysia, t } from 'elysia'
import { users } from '../../src/db/schema'
import { ApiError, ValidationError } from '../../src/errors'
import { Id, ListOf } from '../../src/schemas/common'
import * as S from '../../src/schemas/calls'
import {
  callsByIds,
  callView,
  getCall,
  recordingView,
  getVoicemail,
  listCalls,
  listVoicemails,
  recordingsOfCalls,
  voicemailView,
  type CallRow,
} from '../../src/services/calls'
import { firstActiveNumber } from '../../src/services/phone-numbers'
import { DEFAULT_DOWNLOAD_TTL_MS, DOWNLOAD_PATH_PREFIX, signDownload, verifyDownload } from '../../src/services/download-urls'
import type { Plan } from '../../actors/call-simulator'
import type { GatewayDeps } from '../context'
import { accountLevel, op, userLevel } from '../docs'
import { expandQuery, listEnvelope, listQuery, pageRequest } from '../plugins/lists'
import type { requestContext } from '../plugins/request-context'

const rule = accountLevel()
/**
 * Signed downloads are served outside /v1: whoever holds the URL fetches without an
 * API key, and every /v1 operation takes a bearer credential. The token is the one
 * src/services/download-urls signs (its last path segment).
 */
export const DOWNLOAD_ROUTE_PREFIX = '/downloads/'
const DateBound = (what: string) => t.Optional(t.String({ maxLength: 40, pattern: '^\\d{4}-\\d{2}-\\d{2}([T ].*)?$', description: `${what}: a date (YYYY-MM-DD, whole UTC day) or an ISO 8601 date-time` }))
const Direction = t.Optional(t.Union([t.Literal('inbound'), t.Literal('outbound'), t.Literal('internal')]))

/** The sparse live view of a call that was just planned (nothing of it has happened yet). */
function plannedView(plan: Plan, mode: 'test' | 'live') {
  const c = plan.call
  const started = new Date(c.started_at)
  const row: CallRow = {
    id: c.call_id,
    accountId: c.owner.accountId,
    mode,
    direction: c.direction,
    fromNumber: c.from_number,
    fromLabel: c.from_name ?? null,
    toNumber: c.to_number,
    userId: c.user_id ?? null,
    fromUserId: c.from_user_id ?? null,
    toUserId: c.to_user_id ?? null,
    status: null,
    startedAt: started,
    ringingAt: null,
    answeredAt: null,
    connectedAt: null,
    endedAt: null,
    durationSeconds: null,
    relatedCall: null,
    summary: null,
    sentiment: null,
    simulated: true,
    createdAt: started,
    updatedAt: started,
  }
  return callView(row)
}

export function callRoutes(deps: GatewayDeps, base: ReturnType<typeof requestContext>) {
  const callsPage = async (accountId: string, ctx: Parameters<typeof pageRequest>[0], filters: Parameters<typeof listCalls>[2]) => {
    const page = await listCalls(deps.db, accountId, filters, pageRequest(ctx))
    const recs = await recordingsOfCalls(deps.db, accountId, page.rows.filter((r) => r.status !== null).map((r) => r.id))
    return listEnvelope(ctx, page, (row) => callView(row, recs.get(row.id) ?? null))
  }

  return new Elysia({ name: 'routes/calls' })
    .use(base)
    .get(
      '/v1/calls',
      async ({ auth, query, listContext }) => callsPage(auth.account!.id, listContext(query), query),
      {
        query: t.Object(
          {
            ...listQuery,
            user_id: t.Optional(Id()),
            endpoint_id: t.Optional(Id()),
            direction: Direction,
            from_number: t.Optional(t.String({ maxLength: 32 })),
            to_number: t.Optional(t.String({ maxLength: 32 })),
            status: t.Optional(t.Union([t.Literal('completed'), t.Literal('no-answer'), t.Literal('busy'), t.Literal('failed'), t.Literal('voicemail')])),
            from_date: DateBound('calls started at or after'),
            to_date: DateBound('calls started up to (a date is inclusive)'),
            'expand[]': expandQuery('recording'),
          },
          { additionalProperties: false },
        ),
        detail: op('listCallLogs', { summary: 'List call logs', tag: 'Calls', auth: rule, response: ListOf(S.CallLog) }),
      },
    )
    .get(
      '/v1/calls/:call_id',
      async ({ auth, params }) => {
        const accountId = auth.account!.id
        const row = await getCall(deps.db, accountId, params.call_id)
        const rec = row.status === null ? undefined : ((await recordingsOfCalls(deps.db, accountId, [row.id])).get(row.id) ?? null)
        return callView(row, rec)
      },
      {
        params: t.Object({ call_id: Id() }),
        query: t.Object({ 'expand[]': expandQuery('recording') }, { additionalProperties: false }),
        detail: op('getCallLog', {
          summary: 'Get a call log',
          description: 'While the call is in flight this is a sparse live view: status is null and fields known only after the end are absent.',
          tag: 'Calls',
          auth: rule,
          response: S.CallLog,
          errors: { 404: ['call_not_found'] },
        }),
      },
    )
    .get(
      '/v1/calls/:call_id/transcript',
      async ({ auth, params }) => {
        const accountId = auth.account!.id
        const row = await getCall(deps.db, accountId, params.call_id)
        const rec = (await recordingsOfCalls(deps.db, accountId, [row.id])).get(row.id)
        if (!rec) throw new ApiError(404, `Call ${row.id} has no recording.`, 'recording_not_found')
        const segments = ((rec.transcript as { segments?: unknown[] } | null)?.segments ?? []) as { speaker: string; start_seconds: number; end_seconds: number; text: string }[]
        return {
          object: 'transcript' as const,
          call_id: row.id,
          recording: rec.id,
          status: rec.transcript ? ('completed' as const) : ('processing' as const),
          segments,
          summary: rec.summary,
          sentiment: rec.sentiment ?? null,
        }
      },
      {
        params: t.Object({ call_id: Id() }),
        detail: op('getCallTranscript', {
          summary: 'Get the transcript of a call recording',
          description: '404 recording_not_found when the call has no recording.',
          tag: 'Calls',
          auth: rule,
          response: S.Transcript,
          errors: { 404: ['call_not_found', 'recording_not_found'] },
        }),
      },
    )
    .get(
      '/v1/calls/:call_id/recording',
      async ({ auth, params }) => {
        const accountId = auth.account!.id
        const row = await getCall(deps.db, accountId, params.call_id)
        const rec = (await recordingsOfCalls(deps.db, accountId, [row.id])).get(row.id)
        if (!rec || !rec.storageKey || rec.status !== 'available') throw new ApiError(404, `Call ${row.id} has no recording.`, 'recording_not_found')
        const expiresAt = new Date(deps.clock.now().getTime() + DEFAULT_DOWNLOAD_TTL_MS)
        const signed = signDownload(deps.downloadKey, { key: rec.storageKey, contentType: 'audio/wav', expiresAt })
        return { ...recordingView(rec), url: `${deps.config.baseUrl}${DOWNLOAD_ROUTE_PREFIX}${signed.slice(DOWNLOAD_PATH_PREFIX.length)}`, expires_at: expiresAt.toISOString() }
      },
      {
        params: t.Object({ call_id: Id() }),
        detail: op('getCallRecording', {
          summary: 'Get the recording of a call',
          description: 'Answers with a signed download URL serving the audio (audio/wav), valid for an hour without an API key. Pause and resume leave silent gaps in the one file. 404 recording_not_found when the call has no recording.',
          tag: 'Calls',
          auth: rule,
          response: S.RecordingDownload,
          errors: { 404: ['call_not_found', 'recording_not_found'] },
        }),
      },
    )
    .get(
      '/v1/me/calls',
      async ({ auth, query, listContext }) => {
        const p = auth.principal
        if (p.kind !== 'user_session') throw new Error('unreachable: /v1/me/calls admits user tokens only')
        return callsPage(p.accountId, listContext(query), { ...query, user_id: p.userId })
      },
      {
        query: t.Object({ ...listQuery, direction: Direction, from_date: DateBound('calls started at or after'), to_date: DateBound('calls started up to') }, { additionalProperties: false }),
        detail: op('listMyCalls', { summary: 'The signed-in user’s calls', tag: 'User Profile', auth: userLevel(), response: ListOf(S.CallLog) }),
      },
    )
    .get(
      '/v1/voicemails',
      async ({ auth, query, listContext }) => {
        const ctx = listContext(query)
        const accountId = auth.account!.id
        const page = await listVoicemails(deps.db, accountId, query, pageRequest(ctx))
        const withCall = query['expand[]']?.includes('call')
        const byId = withCall ? await callsByIds(deps.db, accountId, page.rows.flatMap((r) => (r.callId ? [r.callId] : []))) : undefined
        return listEnvelope(ctx, page, (row) => voicemailView(row, byId && { call: (row.callId && byId.get(row.callId)) || null }))
      },
      {
        query: t.Object(
          { ...listQuery, owner: t.Optional(Id()), is_read: t.Optional(t.Boolean()), from_date: DateBound('voicemails left at or after'), 'expand[]': expandQuery('call') },
          { additionalProperties: false },
        ),
        detail: op('listVoicemails', { summary: 'List voicemails', tag: 'Voicemails', auth: rule, response: ListOf(S.Voicemail) }),
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
        params: t.Object({ voicemail_id: Id() }),
        query: t.Object({ 'expand[]': expandQuery('call') }, { additionalProperties: false }),
        detail: op('getVoicemail', { summary: 'Get a voicemail', tag: 'Voicemails', auth: rule, response: S.Voicemail, errors: { 404: ['voicemail_not_found'] } }),
      },
    )
    .get(
      '/v1/voicemails/:voicemail_id/transcript',
      async ({ auth, params }) => {
        const row = await getVoicemail(deps.db, auth.account!.id, params.voicemail_id)
        const stored = row.transcript as { text?: unknown; segments?: unknown } | null
        const text = typeof stored?.text === 'string' ? stored.text : null
        const segments = Array.isArray(stored?.segments)
          ? (stored.segments as { speaker: string; start_seconds: number; end_seconds: number; text: string }[])
          : text !== null
            ? [{ speaker: 'caller', start_seconds: 0, end_seconds: row.durationSeconds, text }]
            : []
        return {
          object: 'voicemail_transcript' as const,
          voicemail_id: row.id,
          call_id: row.callId,
          status: stored ? ('completed' as const) : ('processing' as const),
          text,
          segments,
          summary: row.summary,
          sentiment: row.sentiment ?? null,
        }
      },
      {
        params: t.Object({ voicemail_id: Id() }),
        detail: op('getVoicemailTranscript', {
          summary: 'Get the transcript of a voicemail',
          description:
            'The message as text (and as one segment spoken by the caller), with its summary and sentiment. Until transcription completes (voicemail.transcription.complete) the answer is 200 with status processing, text null and segments empty, as for call transcripts; summary and sentiment stay null until voicemail.summary.complete. 404 voicemail_not_found when the voicemail is not the account’s.',
          tag: 'Voicemails',
          auth: rule,
          response: S.VoicemailTranscript,
          errors: { 404: ['voicemail_not_found'] },
        }),
      },
    )
    .post(
      '/v1/test_helpers/calls',
      async ({ auth, body, mutate }) => {
        const account = auth.account!
        const simulator = deps.callSimulator
        let plan: Plan | undefined
        const response = await mutate(async (tx) => {
          if (account.mode !== 'test') throw new ApiError(400, 'Test helpers work in sandbox mode only; use a sk_test_ key.', 'sandbox_only')
          if (!simulator) throw new ApiError(503, 'This process does not simulate calls (no worker role).', 'call_simulator_unavailable')
          const [user] = await tx.select({ id: users.id }).from(users).where(and(eq(users.accountId, account.id), eq(users.id, body.user)))
          if (!user) throw new ValidationError({ user: 'is not a user of this account' })
          const number = await firstActiveNumber(tx, account.id)
          if (!number) throw new ApiError(400, 'The account has no phone number; order one first (the simulator uses the first as the account side).', 'no_phone_number')
          plan = simulator.plan({
            owner: { platformId: account.platformId, accountId: account.id, mode: account.mode },
            user: user.id,
            direction: body.direction ?? 'inbound',
            account_number: number.number,
            to_number: body.to_number,
            from_number: body.from_number,
            from_name: body.from_name ?? null,
            scenario: body.scenario,
          })
          return { resource: plan.call.call_id, body: { id: plan.call.call_id, object: 'test_call', call: plannedView(plan, account.mode), scenario: plan.scenario } }
        })
        // Committed (audit, idempotency): now the call starts. A replayed request did not plan, so starts nothing.
        if (plan) await simulator!.run(plan)
        return response
      },
      {
        body: S.CreateTestCallRequest,
        detail: op('createTestCall', {
          summary: 'Simulate a call (sandbox only)',
          description:
            'Starts a simulated call on durable timers (VOICE_CLOCK_SPEED compresses it). The account side is the account’s first phone number. Inbound (default) rings the given user directly; outbound dials to_number, where +15005550100 (answered after 5 s, 30 s talk, recorded), +15005550101 (rings 20 s, no answer), +15005550102 (busy), +15005550103 (answering machine, recorded as answered), +15005550104 (answered then transferred) and 933 (answered, call.emergency) are magic. Durations are clamped to 120 s; the response carries the effective scenario. 400: sandbox_only, no_phone_number, validation_error (unknown outcome, user not of the account).',
          tag: 'Test Helpers',
          auth: rule,
          response: S.TestCall,
          errors: { 400: ['sandbox_only', 'no_phone_number'], 503: ['call_simulator_unavailable'] },
        }),
      },
    )
}


/** GET /downloads/{token}: the audio a signed URL grants, until it expires. */
export function downloadRoutes(deps: GatewayDeps) {
  return new Elysia({ name: 'routes/downloads' }).get(`${DOWNLOAD_ROUTE_PREFIX}:token`, async ({ params }) => {
    const v = verifyDownload(deps.downloadKey, params.token, deps.clock.now())
    if (!v.ok) {
      const expired = v.reason === 'expired'
      return new Response(JSON.stringify({ error: expired ? 'This download link has expired.' : 'Not a valid download link.', code: expired ? 'download_expired' : 'not_found' }), {
        status: expired ? 410 : 404,
        headers: { 'content-type': 'application/json' },
      })
    }
    const blob = await deps.storage.get(v.grant.key)
    if (!blob) return new Response(JSON.stringify({ error: 'The file no longer exists.', code: 'not_found' }), { status: 404, headers: { 'content-type': 'application/json' } })
    return new Response(blob.bytes, {
      status: 200,
      headers: { 'content-type': v.grant.contentType, 'content-length': String(blob.bytes.byteLength), 'cache-control': 'private, no-store' },
    })
  })
}
