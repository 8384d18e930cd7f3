/** AI agents: answer the calls routed to an ai_agent voice app. */
import { Elysia, t } from 'elysia'
import { Id } from '../../src/schemas/common'
import * as S from '../../src/schemas/routing'
import { aiAgentView, createAiAgent, deleteAiAgent, getAiAgent, listAiAgents, updateAiAgent } from '../../src/services/routing/ai-agents'
import type { GatewayDeps } from '../context'
import { accountLevel, op } from '../docs'
import { listEnvelope, listQuery, pageRequest } from '../plugins/lists'
import type { requestContext } from '../plugins/request-context'

const TAG = 'AI Agents'
const params = t.Object({ ai_agent_id: Id('AI agent ID') })
const rule = accountLevel()
const notFound = { 404: ['ai_agent_not_found' as const] }

export function aiAgentRoutes(deps: GatewayDeps, base: ReturnType<typeof requestContext>) {
  return new Elysia({ name: 'routes/ai-agents' })
    .use(base)
    .get(
      '/v1/ai-agents',
      async ({ auth, query, listContext }) => {
        const ctx = listContext(query)
        return listEnvelope(ctx, await listAiAgents(deps.db, auth.account!.id, pageRequest(ctx)), aiAgentView)
      },
      {
        query: t.Object(listQuery, { additionalProperties: false }),
        detail: op('listAIAgents', { summary: 'List AI agents', tag: TAG, auth: rule, list: S.AiAgent }),
      },
    )
    .post(
      '/v1/ai-agents',
      ({ auth, body, mutate }) =>
        mutate(async (tx) => {
          const row = await createAiAgent(tx, deps.clock, auth.account!.id, body)
          return { resource: row.id, body: aiAgentView(row) }
        }),
      { body: S.CreateAiAgentRequest, detail: op('createAIAgent', { summary: 'Create an AI agent', tag: TAG, auth: rule, response: S.AiAgent }) },
    )
    .get('/v1/ai-agents/:ai_agent_id', async ({ auth, params }) => aiAgentView(await getAiAgent(deps.db, auth.account!.id, params.ai_agent_id)), {
      params,
      detail: op('getAIAgent', { summary: 'Get an AI agent', tag: TAG, auth: rule, response: S.AiAgent, errors: notFound }),
    })
    .post(
      '/v1/ai-agents/:ai_agent_id',
      ({ auth, params, body, mutate }) =>
        mutate(async (tx) => {
          const row = await updateAiAgent(tx, deps.clock, auth.account!.id, params.ai_agent_id, body)
          return { resource: row.id, body: aiAgentView(row) }
        }),
      {
        params,
        body: S.UpdateAiAgentRequest,
        detail: op('updateAIAgent', { summary: 'Update an AI agent', tag: TAG, auth: rule, response: S.AiAgent, errors: notFound }),
      },
    )
    .delete(
      '/v1/ai-agents/:ai_agent_id',
      ({ auth, params, mutate }) =>
        mutate(async (tx) => {
          await deleteAiAgent(tx, deps.routingCheck, auth.account!.id, params.ai_agent_id)
          return { resource: params.ai_agent_id, body: { id: params.ai_agent_id, object: 'ai_agent' as const, deleted: true as const } }
        }),
      {
        params,
        detail: op('deleteAIAgent', {
          summary: 'Delete an AI agent',
          description: 'Refused with 409 routing_object_in_use while a voice app names the agent.',
          tag: TAG,
          auth: rule,
          response: S.DeletedRoutingObject('ai_agent'),
          errors: { ...notFound, 409: ['routing_object_in_use'] },
        }),
      },
    )
}
