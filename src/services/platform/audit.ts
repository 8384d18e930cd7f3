/** The audit trail: one row per mutation attempt, written with the change it records. */
import { and, eq, gte, lte, type SQL } from 'drizzle-orm'
import type { Db } from '../../db/client'
import { statement } from '../../db/statements'
import { auditLogs, users } from '../../db/schema'
import { notFound } from '../../errors'
import { newId } from '../../ids'
import { keysetPage, type PageRequest } from '../../pagination'

export type AuditRow = typeof auditLogs.$inferSelect
export type AuditEntry = Omit<typeof auditLogs.$inferInsert, 'id'>

const INSERT_AUDIT = statement(
  `insert into audit_logs (id, platform_id, account_id, actor, credential, event, resource, outcome, status_code, ip_address, request_id, created_at)
    values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12::timestamptz)`,
)

/** One row per mutation attempt, so a fixed statement (see db/statements.ts). */
export async function recordAudit(db: Db, e: AuditEntry): Promise<void> {
  await INSERT_AUDIT.rows(db, [
    newId('auditLog'),
    e.platformId,
    e.accountId ?? null,
    e.actor,
    e.credential,
    e.event,
    e.resource ?? null,
    e.outcome,
    e.statusCode,
    e.ipAddress ?? null,
    e.requestId,
    e.createdAt.toISOString(),
  ])
}

export function auditView(row: AuditRow) {
  return {
    id: row.id,
    object: 'audit_log' as const,
    account: row.accountId,
    event: row.event,
    resource: row.resource,
    actor: row.actor,
    credential: row.credential,
    outcome: row.outcome,
    status_code: row.statusCode,
    ip_address: row.ipAddress,
    request_id: row.requestId,
    created_at: row.createdAt.toISOString(),
  }
}

export interface AuditFilters {
  event?: string
  resource?: string
  actor?: string
  outcome?: 'success' | 'failure'
  ip_address?: string
  request_id?: string
  created_after?: string
  created_before?: string
}

export function listAuditLogs(db: Db, accountId: string, f: AuditFilters, page: PageRequest) {
  const conds: (SQL | undefined)[] = [eq(auditLogs.accountId, accountId)]
  if (f.event) conds.push(eq(auditLogs.event, f.event))
  if (f.resource) conds.push(eq(auditLogs.resource, f.resource))
  if (f.actor) conds.push(eq(auditLogs.actor, f.actor))
  if (f.outcome) conds.push(eq(auditLogs.outcome, f.outcome))
  if (f.ip_address) conds.push(eq(auditLogs.ipAddress, f.ip_address))
  if (f.request_id) conds.push(eq(auditLogs.requestId, f.request_id))
  if (f.created_after) conds.push(gte(auditLogs.createdAt, new Date(f.created_after)))
  if (f.created_before) conds.push(lte(auditLogs.createdAt, new Date(f.created_before)))
  return keysetPage<AuditRow>(db, auditLogs, and(...conds), page)
}

/** Resolves an audit actor that is a person (a user of the account) to who they are. */
export async function getAdminUser(db: Db, accountId: string, id: string) {
  const [row] = await db
    .select()
    .from(users)
    .where(and(eq(users.accountId, accountId), eq(users.id, id)))
  if (!row) throw notFound('admin_user', id)
  return { id: row.id, object: 'admin_user' as const, account: row.accountId, name: row.name, email: row.email, created_at: row.createdAt.toISOString() }
}
