/**
 * The operator interface (fixed by ARCHITECTURE.md): health, readiness, the
 * platform admin API behind VOICE_ADMIN_TOKEN, and the agreement's public page.
 */
import { timingSafeEqual, createHash } from 'node:crypto'
import { Elysia, t } from 'elysia'
import { ApiError, unauthorized } from '../../src/errors'
import { createKey, createPlatform, listKeys, revokeKey, updatePlatform } from '../../src/services/platform/platforms'
import { listDeadLetters, reviveDeadLetter } from '../../src/events/dead-letters'
import { listRecordedMail } from '../../src/events/mail'
import { TOS_BODY, TOS_VERSION } from '../../src/services/accounts/tos'
import type { GatewayDeps } from '../context'
import type { FailureLimiter } from '../plugins/rate-limit'

const digest = (s: string) => createHash('sha256').update(s).digest()

export function operatorRoutes(deps: GatewayDeps, authFailures: FailureLimiter) {
  const adminToken = deps.config.adminToken
  const requireAdmin = ({ request, server }: { request: Request; server: { requestIP(r: Request): { address: string } | null } | null }) => {
    // With no VOICE_ADMIN_TOKEN the operator API does not exist.
    if (adminToken === undefined) throw new ApiError(404, 'No such route.', 'not_found')
    const ip = server?.requestIP(request)?.address ?? null
    authFailures.check(ip)
    const m = request.headers.get('authorization')?.match(/^Bearer\s+(\S+)\s*$/i)
    if (!m || !timingSafeEqual(digest(m[1]!), digest(adminToken))) {
      authFailures.failed(ip)
      throw unauthorized('Invalid operator token.')
    }
  }
  const AdminEmails = t.Optional(
    t.Array(t.String({ format: 'email', maxLength: 254 }), { maxItems: 20, description: 'mailed about the platform, e.g. an unhealthy webhook endpoint' }),
  )
  const AllowedOrigins = t.Optional(
    t.Array(t.String({ minLength: 1, maxLength: 255 }), {
      maxItems: 20,
      description: 'browser origins (scheme://host[:port]) from which the platform’s account sessions and user tokens may call the API (CORS)',
    }),
  )
  const PlatformBody = t.Object(
    {
      name: t.String({ minLength: 1, maxLength: 200 }),
      live_enabled: t.Optional(t.Boolean()),
      admin_emails: AdminEmails,
      allowed_origins: AllowedOrigins,
    },
    { additionalProperties: false },
  )
  const PlatformUpdate = t.Object(
    {
      name: t.Optional(t.String({ minLength: 1, maxLength: 200 })),
      live_enabled: t.Optional(t.Boolean()),
      admin_emails: AdminEmails,
      allowed_origins: AllowedOrigins,
    },
    { additionalProperties: false },
  )
  const Id = t.String({ minLength: 1, maxLength: 255 })
  const PlatformId = t.Object({ id: Id })
  const Limit = t.Object({ limit: t.Optional(t.Integer({ minimum: 1, maximum: 500, default: 100 })) }, { additionalProperties: false })

  return new Elysia({ name: 'routes/operator' })
    .get('/healthz', () => ({ status: 'ok' }))
    .get('/readyz', async ({ set }) => {
      const ready = await deps.readiness().catch(() => false)
      set.status = ready ? 200 : 503
      return { status: ready ? 'ready' : 'not_ready' }
    })
    .get('/legal/subscription-agreement/:version', ({ params, set }) => {
      if (params.version !== TOS_VERSION) throw new ApiError(404, 'No such agreement version.', 'not_found')
      set.headers['content-type'] = 'text/html; charset=utf-8'
      return TOS_BODY
    })
    .group('/admin', (admin) =>
      admin
        // Transform runs before validation: the token is checked first, so nobody learns the schema (or that the API exists) without it.
        .onTransform(requireAdmin)
        .post('/platforms', ({ body }) => createPlatform(deps.db, deps.clock, body), { body: PlatformBody })
        .post('/platforms/:id', ({ params, body }) => updatePlatform(deps.db, deps.clock, params.id, body), {
          params: t.Object({ id: t.String({ minLength: 1, maxLength: 255 }) }),
          body: PlatformUpdate,
        })
        // Key rotation for any platform: make a new key (shown once), switch over, revoke the old one.
        .get('/platforms/:id/keys', ({ params }) => listKeys(deps.db, params.id).then((data) => ({ object: 'list', data })), { params: PlatformId })
        .post('/platforms/:id/keys', ({ params, body }) => createKey(deps.db, deps.clock, params.id, body.mode), {
          params: PlatformId,
          body: t.Object({ mode: t.Union([t.Literal('test'), t.Literal('live')]) }, { additionalProperties: false }),
        })
        .post('/platforms/:id/keys/:key_id/revoke', ({ params }) => revokeKey(deps.db, deps.clock, params.id, params.key_id), {
          params: t.Object({ id: Id, key_id: Id }),
        })
        // The dead-letter queue: deliveries that used up their attempts.
        .get('/dead-letters', ({ query }) => listDeadLetters(deps.db, query.limit ?? 100).then((data) => ({ object: 'list', data })), { query: Limit })
        .post(
          '/dead-letters/:id/replay',
          async ({ params }) => {
            // Any process may revive the row; the delivering one (here or elsewhere, woken over the bus) sends it.
            const replayed = deps.delivery ? await deps.delivery.replay(params.id) : (await reviveDeadLetter(deps.db, deps.clock, params.id)) !== undefined
            if (!replayed) throw new ApiError(404, 'No such dead letter.', 'dead_letter_not_found')
            if (!deps.delivery) deps.outboxCommitted()
            return { id: params.id, object: 'dead_letter', replayed: true }
          },
          { params: t.Object({ id: t.String({ minLength: 1, maxLength: 255 }) }) },
        )
        // The recorded operator mailbox (used when no SMTP_URL is configured).
        .get('/mail', ({ query }) => listRecordedMail(deps.db, query.limit ?? 100).then((data) => ({ object: 'list', data })), { query: Limit }),
    )
}
