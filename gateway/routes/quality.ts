/**
 * Quality: which of the account's phones are registered right now, with each
 * binding's line, contact, transport, source address and expiry. What a binding is
 * lives in the device actors' state (src/services/devices/registrations).
 *
 * And the media quality of answered SIP calls (per-leg packet loss, jitter and an
 * estimated MOS, kept by the media role when a call ends): a summary by UTC hour or
 * day, and the worst calls of a period (src/services/quality/call-quality).
 */
import { Elysia, t } from 'elysia'
import { Id } from '../../src/schemas/common'
import * as S from '../../src/schemas/quality'
import { deviceRegistrationsPage, deviceRegistrationView } from '../../src/services/devices/registrations'
import {
  DEFAULT_PERIOD_DAYS,
  DEFAULT_WORST_CALLS,
  MAX_HOURLY_PERIOD_DAYS,
  MAX_PERIOD_DAYS,
  POOR_MOS,
  qualitySummary,
  qualitySummaryView,
  reportPeriod,
  worstCalls,
  worstCallsView,
} from '../../src/services/quality/call-quality'
import type { GatewayDeps } from '../context'
import { accountLevel, op } from '../docs'
import { listEnvelope, listQuery, pageRequest } from '../plugins/lists'
import type { requestContext } from '../plugins/request-context'

const TAG = 'Quality'
const rule = accountLevel()

export function qualityRoutes(deps: GatewayDeps, base: ReturnType<typeof requestContext>) {
  return new Elysia({ name: 'routes/quality' })
    .use(base)
    .get(
      '/v1/quality/device-registrations',
      async ({ auth, query, listContext }) => {
        const ctx = listContext(query)
        const now = deps.clock.now()
        const filters = { device: query.device, user: query.user, type: query.type }
        const page = await deviceRegistrationsPage(deps.db, auth.account!.id, filters, now, pageRequest(ctx))
        return listEnvelope(ctx, page, (item) => deviceRegistrationView(item, now))
      },
      {
        query: t.Object(
          {
            ...listQuery,
            device: t.Optional(Id('only this device')),
            user: t.Optional(Id('only devices with a binding that makes this user reachable')),
            type: t.Optional(t.Union([t.Literal('deskphone'), t.Literal('dect_base')], { description: 'only devices of this type' })),
          },
          { additionalProperties: false },
        ),
        detail: op('listDeviceRegistrations', {
          summary: 'List device registrations',
          description:
            'The account’s phones with at least one live SIP registration, newest device first, each with its bindings (line, contact, transport, source address, User-Agent, expiry). A DECT base registers for its handsets: their lines show under the base, with line_device naming the handset. A binding past its expiry is never shown. Filters that match nothing (an unknown device or user included) give an empty list.',
          tag: TAG,
          auth: rule,
          list: S.DeviceRegistration,
        }),
      },
    )
    .get(
      '/v1/quality/summary',
      async ({ auth, query }) => {
        const granularity = query.granularity ?? 'day'
        const period = reportPeriod(query, deps.clock.now(), granularity)
        return qualitySummaryView(await qualitySummary(deps.db, auth.account!.id, period, granularity))
      },
      {
        query: t.Object({ ...periodQuery, granularity: t.Optional(Granularity) }, { additionalProperties: false }),
        detail: op('getQualitySummary', {
          summary: 'Summarize call quality',
          description: `The media quality of the account’s answered calls (calls between registered phones, whose RTP the platform relays) that ended in the period [from, to), by UTC hour or day. Each call has a MOS, packet loss and jitter, those of its worse leg; a leg is what the platform received from one phone, so network delay is not counted (${MOS_NOTE}). Every bucket counts the calls, those missing audio (a phone sent nothing: they have no MOS when neither phone sent audio, and are not averaged), and the poor calls (MOS below ${POOR_MOS}: below R 70 on the G.107 scale, where many users are dissatisfied); gives the average and lowest MOS, the average and 95th percentile jitter, and the average packet loss. Every hour or day of the period is listed in order, those without calls included (calls 0, figures null); totals cover the whole period. ${PERIOD_NOTE} Simulated calls (POST /v1/test_helpers/calls) carry no media and do not count.`,
          tag: TAG,
          auth: rule,
          response: S.QualitySummary,
        }),
      },
    )
    .get(
      '/v1/quality/worst-calls',
      async ({ auth, query }) => {
        const period = reportPeriod(query, deps.clock.now())
        return worstCallsView(period, await worstCalls(deps.db, auth.account!.id, period, query.limit ?? DEFAULT_WORST_CALLS))
      },
      {
        query: t.Object(
          {
            ...periodQuery,
            limit: t.Optional(t.Integer({ minimum: 1, maximum: 100, default: DEFAULT_WORST_CALLS, description: 'how many calls, 1 to 100 (default 10)' })),
          },
          { additionalProperties: false },
        ),
        detail: op('getWorstCalls', {
          summary: 'List the calls of worst quality',
          description: `The account’s answered calls that ended in the period [from, to) with the lowest MOS, at most limit of them: lowest MOS first, then highest packet loss, then the most recent. Each call is shown with its call log details (direction, numbers, users, start, answer, duration), its MOS, packet loss and jitter (those of its worse leg), and both legs’ figures: a leg is what the platform received from one phone (${MOS_NOTE}). A call in which neither phone sent audio has no MOS and is not ranked (the summary counts it in calls_missing_audio). ${PERIOD_NOTE} Not paginated: a ranking of one period, not a list to page through.`,
          tag: TAG,
          auth: rule,
          response: S.WorstCalls,
        }),
      },
    )
}

const MOS_NOTE = 'packet loss and jitter per RFC 3550; MOS estimated with a simplified ITU-T G.107 E-model for G.711 from them, 1 to 4.5, 4.41 at best'
const PERIOD_NOTE = `from and to are ISO 8601 date-times with a time zone or dates (a date is a whole UTC day: to=2026-06-07 includes that day); to defaults to now and from to ${DEFAULT_PERIOD_DAYS} days before to. from must come before to, and the period be at most ${MAX_PERIOD_DAYS} days (${MAX_HOURLY_PERIOD_DAYS} with granularity hour); otherwise 400 validation_error with the field’s reason in details. A call counts in the period its media ended in.`

const Instant = (what: string) =>
  t.Optional(
    t.String({
      minLength: 10,
      maxLength: 40,
      description: `${what}: an ISO 8601 date-time with a time zone (2026-06-01T09:00:00Z) or a date (YYYY-MM-DD, a whole UTC day)`,
    }),
  )
const periodQuery = {
  from: Instant('start of the period, inclusive (default: 7 days before to)'),
  to: Instant('end of the period, exclusive for a date-time, including the day for a date (default: now)'),
}
const Granularity = t.Union([t.Literal('hour'), t.Literal('day')], { description: 'bucket size: a UTC hour or day (default day)', default: 'day' })
