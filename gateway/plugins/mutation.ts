/**
 * The one way a route changes anything. `mutate` runs the work in a transaction
 * together with its audit record and, when the request carries an
 * Idempotency-Key, the replayable response; a retry replays that response.
 */
import { ApiError } from '../../src/errors'
import type { Db } from '../../src/db/client'
import { settleInOrder } from '../../src/db/statements'
import { appendedEvents } from '../../src/events/outbox'
import { recordAudit } from '../../src/services/platform/audit'
import { claimIdempotencyKey, completeIdempotencyKey, releaseIdempotencyKey, requestHash } from '../../src/services/platform/idempotency'
import type { Principal } from '../../src/services/platform/principal'
import type { GatewayDeps } from '../context'

export interface MutationResult {
  /** The resource the mutation acted on, for the audit log. */
  resource: string | null
  /** The account the mutation belongs to, when the route has none in its context (account creation). */
  accountId?: string | null
  body: unknown
  status?: number
}

/** `mutate` as a route gets it: the work in one transaction with the request's audit (and idempotency) records. */
export type Mutate = (work: (tx: Db, ctx: MutationContext) => Promise<MutationResult>) => Promise<Response>

export interface MutationContext {
  requestId: string
  /**
   * A write the work has sent on its transaction without waiting for it (nothing it
   * does next needs its answer): the mutation waits for it together with its audit
   * record, which then goes to the database in the same round trip. Its failure is
   * the mutation's, as if it had been awaited.
   */
  alongside(write: Promise<unknown>): void
}

export interface RequestFacts {
  requestId: string
  ip: string | null
  method: string
  path: string
  operationId: string
  principal: Principal
  accountId: string | null
  idempotencyKey: string | undefined
  body: unknown
}

export const IDEMPOTENCY_KEY_MAX = 255

/** JSON with object keys sorted: the same fields in another order are the same request. */
function canonicalJson(value: unknown): string {
  return JSON.stringify(value, (_k, v) =>
    v && typeof v === 'object' && !Array.isArray(v)
      ? Object.fromEntries(
          Object.keys(v)
            .sort()
            .map((k) => [k, v[k]]),
        )
      : v,
  )
}

/** Errors whose failed attempt mutate() has already written to the audit log. */
export const auditedErrors = new WeakSet<object>()

const credentialOf = (p: Principal) => p.kind

export function jsonResponse(status: number, body: string, requestId: string, extra: Record<string, string> = {}) {
  return new Response(body, { status, headers: { 'content-type': 'application/json', 'x-request-id': requestId, ...extra } })
}

/** Who holds an Idempotency-Key namespace: the platform for keys, the account or user for tokens. */
function idempotencyScope(p: Principal): string {
  if (p.kind === 'secret_key') return `platform:${p.platformId}:${p.mode}`
  if (p.kind === 'account_session') return `account:${p.accountId}`
  return `user:${p.userId}`
}

export function createMutator(deps: GatewayDeps) {
  const audit = (db: Db, f: RequestFacts, outcome: 'success' | 'failure', status: number, resource: string | null, accountId: string | null) =>
    recordAudit(db, {
      platformId: f.principal.platformId,
      accountId,
      actor: f.principal.actor,
      credential: credentialOf(f.principal),
      event: f.operationId,
      resource,
      outcome,
      statusCode: status,
      ipAddress: f.ip,
      requestId: f.requestId,
      createdAt: deps.clock.now(),
    })

  async function mutate(f: RequestFacts, work: (tx: Db, ctx: MutationContext) => Promise<MutationResult>): Promise<Response> {
    const scope = idempotencyScope(f.principal)
    const key = f.idempotencyKey
    if (key !== undefined) {
      const hash = requestHash([f.method, f.path, f.accountId ?? '', canonicalJson(f.body ?? null)])
      const claim = await claimIdempotencyKey(deps.db, deps.clock, scope, key, hash)
      if (claim.kind === 'replay') return jsonResponse(claim.status, claim.body, f.requestId, { 'idempotent-replayed': 'true' })
    }
    try {
      let wroteEvents = false
      let tail: Promise<unknown> | undefined
      const response = await deps.db.transaction(async (tx) => {
        const sent: Promise<unknown>[] = []
        const alongside = (write: Promise<unknown>) => {
          // Handled here too: a write the work gave up on (it threw first) must not reject unobserved.
          write.catch(() => {})
          sent.push(write)
        }
        const result = await work(tx, { requestId: f.requestId, alongside })
        wroteEvents = appendedEvents(tx)
        const status = result.status ?? 200
        const body = JSON.stringify(result.body)
        // One round trip: the work's writes still on their way, the audit record and the replayable answer.
        const last = settleInOrder([
          ...sent,
          audit(tx, f, 'success', status, result.resource, result.accountId !== undefined ? result.accountId : f.accountId),
          key !== undefined ? completeIdempotencyKey(tx, scope, key, status, body) : Promise.resolve(),
        ])
        if (deps.database.kind === 'postgres') {
          // postgres.js sends the COMMIT as soon as this returns: behind these statements on the connection, in
          // the same round trip. Should one of them fail, PostgreSQL ends the aborted transaction with a rollback
          // at that COMMIT, and `tail` (awaited below, before any answer) throws that statement's error.
          last.catch(() => {})
          tail = last
        } else await last
        return jsonResponse(status, body, f.requestId)
      })
      await tail
      if (wroteEvents) deps.outboxCommitted()
      return response
    } catch (e) {
      // The work rolled back. Record the failed attempt; a client error is the
      // request's answer and is replayed, anything else frees the key for a retry.
      const status = e instanceof ApiError ? e.status : 500
      await audit(deps.db, f, 'failure', status, null, f.accountId).catch((err) => deps.log.error({ err }, 'audit write failed'))
      if (key !== undefined) {
        if (e instanceof ApiError && status < 500) {
          await completeIdempotencyKey(deps.db, scope, key, status, JSON.stringify(e.toBody())).catch(() => releaseIdempotencyKey(deps.db, scope, key))
        } else {
          await releaseIdempotencyKey(deps.db, scope, key).catch(() => {})
        }
      }
      if (typeof e === 'object' && e !== null) auditedErrors.add(e)
      throw e
    }
  }

  /** Records a mutation refused before its handler ran (validation, permission). */
  const refused = (f: Omit<RequestFacts, 'body' | 'idempotencyKey'>, status: number) =>
    audit(deps.db, { ...f, body: null, idempotencyKey: undefined }, 'failure', status, null, f.accountId)

  return { mutate, refused }
}
