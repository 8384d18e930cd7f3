/** AI agents: an agent answers calls through an ai_agent voice app that names it. */
import { and, eq } from 'drizzle-orm'
import type { Clock } from '../../clock'
import type { Db } from '../../db/client'
import { aiAgents } from '../../db/schema'
import { notFound } from '../../errors'
import { newId } from '../../ids'
import { keysetPage, type PageRequest } from '../../pagination'
import { guardedDelete, type RoutingCheck } from './config'

export type AiAgentRow = typeof aiAgents.$inferSelect

export function aiAgentView(row: AiAgentRow) {
  return {
    id: row.id,
    object: 'ai_agent' as const,
    account: row.accountId,
    name: row.name,
    instructions: row.instructions,
    greeting: row.greeting,
    created_at: row.createdAt.toISOString(),
    updated_at: row.updatedAt.toISOString(),
  }
}

export interface AiAgentInput {
  name?: string
  instructions?: string
  greeting?: string | null
}

export async function createAiAgent(tx: Db, clock: Clock, accountId: string, input: AiAgentInput & { name: string; instructions: string }) {
  const now = clock.now()
  const [row] = await tx
    .insert(aiAgents)
    .values({
      id: newId('aiAgent'),
      accountId,
      name: input.name,
      instructions: input.instructions,
      greeting: input.greeting ?? null,
      createdAt: now,
      updatedAt: now,
    })
    .returning()
  return row!
}

export async function getAiAgent(db: Db, accountId: string, id: string): Promise<AiAgentRow> {
  const [row] = await db
    .select()
    .from(aiAgents)
    .where(and(eq(aiAgents.accountId, accountId), eq(aiAgents.id, id)))
  if (!row) throw notFound('ai_agent', id)
  return row
}

export function listAiAgents(db: Db, accountId: string, page: PageRequest) {
  return keysetPage<AiAgentRow>(db, aiAgents, eq(aiAgents.accountId, accountId), page)
}

export async function updateAiAgent(tx: Db, clock: Clock, accountId: string, id: string, input: AiAgentInput) {
  await getAiAgent(tx, accountId, id)
  const set: Partial<typeof aiAgents.$inferInsert> = { updatedAt: clock.now() }
  if (input.name !== undefined) set.name = input.name
  if (input.instructions !== undefined) set.instructions = input.instructions
  if (input.greeting !== undefined) set.greeting = input.greeting
  const [row] = await tx
    .update(aiAgents)
    .set(set)
    .where(and(eq(aiAgents.accountId, accountId), eq(aiAgents.id, id)))
    .returning()
  return row!
}

/** Refused (409 routing_object_in_use) while a voice app names the agent. */
export async function deleteAiAgent(tx: Db, check: RoutingCheck, accountId: string, id: string) {
  await getAiAgent(tx, accountId, id)
  await guardedDelete(tx, check, accountId, `AI agent ${id}`, async () => {
    await tx.delete(aiAgents).where(and(eq(aiAgents.accountId, accountId), eq(aiAgents.id, id)))
  })
}
