/** The upload-backed groups (audio clips, files, voicemail greetings), mounted as one plugin to keep the app's type chain short. */
import { Elysia } from 'elysia'
import type { GatewayDeps } from '../context'
import type { requestContext } from '../plugins/request-context'
import { audioClipRoutes } from './audio-clips'
import { fileRoutes } from './files'
import { voicemailGreetingRoutes } from './voicemail-greetings'

export function mediaRoutes(deps: GatewayDeps, base: ReturnType<typeof requestContext>) {
  return new Elysia({ name: 'routes/media' }).use(voicemailGreetingRoutes(deps, base)).use(audioClipRoutes(deps, base)).use(fileRoutes(deps, base))
}
