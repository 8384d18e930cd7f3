/**
 * Voice apps: a routing target that hands the call to a program. A webhook app
 * delivers it to its URL (signed with the app's secret); an ai_agent app lets an
 * AI agent of the account answer. The secret is shown only when it is made
 * (create, rotate_secret), and stored sealed under the master key (src/auth/):
 * whatever signs with it opens it with `openSecret(row.secret, sealedContext.voiceAppSecret(row.id))`.
 */
import { randomBytes } from 'node:crypto'
import { and, eq } from 'drizzle-orm'
import { sealSecret } from '../../auth/master-key'
import { sealedContext } from '../../auth/sealed-columns'
import type { Clock } from '../../clock'
import type { Db } from '../../db/client'
import { voiceApps } from '../../db/schema'
import { type FieldDetails, notFound, ValidationError } from '../../errors'
import { idKind, newId } from '../../ids'
import { keysetPage, type PageRequest } from '../../pagination'
import { guardedDelete, guardedWrite, type RoutingCheck } from './config'

export type VoiceAppRow = typeof voiceApps.$inferSelect

export function voiceAppView(row: VoiceAppRow, options: { secret?: boolean } = {}) {
  return {
    id: row.id,
    object: 'voice_app' as const,
    account: row.accountId,
    name: row.name,
    kind: row.kind,
    url: row.url,
    ai_agent: row.aiAgent,
    ...(options.secret ? { secret: row.secret } : {}),
    created_at: row.createdAt.toISOString(),
    updated_at: row.updatedAt.toISOString(),
  }
}

const newSecret = () => `vsec_${randomBytes(24).toString('base64url')}`

export interface VoiceAppInput {
  name?: string
  kind?: 'webhook' | 'ai_agent'
  url?: string | null
  ai_agent?: string | null
}

/** The fields a kind needs, on the app as it will be stored. */
function checkKind(app: { kind: 'webhook' | 'ai_agent'; url: string | null; aiAgent: string | null }) {
  const details: FieldDetails = {}
  if (app.kind === 'webhook') {
    if (!app.url) details.url = 'is required for a webhook voice app'
    else if (!/^https?:\/\//.test(app.url)) details.url = 'must be an http or https URL'
    if (app.aiAgent) details.ai_agent = 'only an ai_agent voice app names an AI agent'
  } else {
    if (!app.aiAgent) details.ai_agent = 'is required for an ai_agent voice app'
    else if (idKind(app.aiAgent) !== 'aiAgent') details.ai_agent = `AI agent ${JSON.stringify(app.aiAgent)} is not in this account`
    if (app.url) details.url = 'only a webhook voice app has a URL'
  }
  if (Object.keys(details).length > 0) throw new ValidationError(details)
}

export async function createVoiceApp(
  tx: Db,
  clock: Clock,
  check: RoutingCheck,
  accountId: string,
  input: VoiceAppInput & { name: string; kind: 'webhook' | 'ai_agent' },
) {
  const app = { kind: input.kind, url: input.url ?? null, aiAgent: input.ai_agent ?? null }
  checkKind(app)
  const id = newId('voiceApp')
  const now = clock.now()
  const secret = newSecret()
  return guardedWrite(tx, check, accountId, { collection: 'voiceApps', id }, async () => {
    const [row] = await tx
      .insert(voiceApps)
      .values({ id, accountId, name: input.name, ...app, secret: sealSecret(secret, sealedContext.voiceAppSecret(id)), createdAt: now, updatedAt: now })
      .returning()
    // One of the two answers that show the secret: the row with it in the clear.
    return { ...row!, secret }
  })
}

export async function getVoiceApp(db: Db, accountId: string, id: string): Promise<VoiceAppRow> {
  const [row] = await db
    .select()
    .from(voiceApps)
    .where(and(eq(voiceApps.accountId, accountId), eq(voiceApps.id, id)))
  if (!row) throw notFound('voice_app', id)
  return row
}

export function listVoiceApps(db: Db, accountId: string, page: PageRequest) {
  return keysetPage<VoiceAppRow>(db, voiceApps, eq(voiceApps.accountId, accountId), page)
}

async function store(tx: Db, clock: Clock, accountId: string, id: string, set: Partial<typeof voiceApps.$inferInsert>) {
  const [row] = await tx
    .update(voiceApps)
    .set({ ...set, updatedAt: clock.now() })
    .where(and(eq(voiceApps.accountId, accountId), eq(voiceApps.id, id)))
    .returning()
  return row!
}

/** Changing kind clears the other kind's field unless it is given; a dial plan notifying the app keeps it from becoming an ai_agent app. */
export async function updateVoiceApp(tx: Db, clock: Clock, check: RoutingCheck, accountId: string, id: string, input: VoiceAppInput) {
  const old = await getVoiceApp(tx, accountId, id)
  const kind = input.kind ?? old.kind
  const app = {
    kind,
    url: input.url !== undefined ? input.url : kind === 'webhook' ? old.url : null,
    aiAgent: input.ai_agent !== undefined ? input.ai_agent : kind === 'ai_agent' ? old.aiAgent : null,
  }
  checkKind(app)
  return guardedWrite(tx, check, accountId, { collection: 'voiceApps', id }, () =>
    store(tx, clock, accountId, id, { ...app, ...(input.name !== undefined ? { name: input.name } : {}) }),
  )
}

export async function rotateVoiceAppSecret(tx: Db, clock: Clock, accountId: string, id: string) {
  await getVoiceApp(tx, accountId, id)
  const secret = newSecret()
  const row = await store(tx, clock, accountId, id, { secret: sealSecret(secret, sealedContext.voiceAppSecret(id)) })
  return { ...row, secret }
}

export async function deleteVoiceApp(tx: Db, check: RoutingCheck, accountId: string, id: string) {
  await getVoiceApp(tx, accountId, id)
  await guardedDelete(tx, check, accountId, `voice app ${id}`, async () => {
    await tx.delete(voiceApps).where(and(eq(voiceApps.accountId, accountId), eq(voiceApps.id, id)))
  })
}
