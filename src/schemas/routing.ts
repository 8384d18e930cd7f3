/** Call routing: extensions (ring groups, queues, dial plans... join here). */
import { Body, DateTime, Id, T } from './common'

export const Extension = T.Object({
  id: T.String(),
  object: T.Literal('extension'),
  account: T.String(),
  number: T.String(),
  target: T.String(),
  status: T.Union([T.Literal('active'), T.Literal('inactive')]),
  created_at: DateTime(),
  updated_at: DateTime(),
})

export const CreateExtensionRequest = Body({
  number: T.String({ pattern: '^[0-9]{1,10}$', description: 'dial code; its length must equal config.extension_length' }),
  target: Id('routing target ID (user, voice app, dial plan, ring group, shared voicemail box or queue)'),
  status: T.Optional(T.Union([T.Literal('active'), T.Literal('inactive')])),
})

export const UpdateExtensionRequest = Body({
  target: T.Optional(Id()),
  status: T.Optional(T.Union([T.Literal('active'), T.Literal('inactive')])),
})
