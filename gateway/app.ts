/**
 * The Elysia gateway: request context, the one error handler, then one route
 * module per resource group. `app.handle(request)` serves tests in process;
 * `app.listen` serves the network.
 */
import { Elysia } from 'elysia'
import type { GatewayDeps } from './context'
import { buildOpenApi } from './openapi'
import { errorHandler } from './plugins/errors'
import { createFailureLimiter } from './plugins/rate-limit'
import { requestContext } from './plugins/request-context'
import { RouteTable } from './route-table'
import { accountRoutes } from './routes/accounts'
import { auditLogRoutes } from './routes/audit-logs'
import { callRoutes } from './routes/calls'
import { docsPageRoutes } from './routes/docs-page'
import { downloadRoutes } from './routes/downloads'
import { provisioningRoutes } from './routes/provisioning'
import { eventRoutes } from './routes/events'
import { buttonTemplateRoutes } from './routes/button-templates'
import { dectBaseRoutes } from './routes/dect-bases'
import { deskphoneRoutes } from './routes/deskphones'
import { deviceRoutes } from './routes/devices'
import { extensionRoutes } from './routes/extensions'
import { ringGroupRoutes } from './routes/ring-groups'
import { scheduleRoutes } from './routes/schedules'
import { dialPlanRoutes } from './routes/dial-plans'
import { sharedVoicemailBoxRoutes } from './routes/shared-voicemail-boxes'
import { voiceAppRoutes } from './routes/voice-apps'
import { aiAgentRoutes } from './routes/ai-agents'
import { queueRoutes } from './routes/queues'
import { locationRoutes } from './routes/locations'
import { operatorRoutes } from './routes/operator'
import { phoneNumberRoutes } from './routes/phone-numbers'
import { presenceRoutes } from './routes/presence'
import { qualityRoutes } from './routes/quality'
import { sessionRoutes } from './routes/sessions'
import { userRoutes } from './routes/users'
import { testHelperRoutes } from './routes/test-helpers'
import { userProfileRoutes } from './routes/user-profile'
import { voicemailRoutes } from './routes/voicemails'
import { mediaRoutes } from './routes/media'
import { webhookEndpointRoutes } from './routes/webhook-endpoints'
import { portOrderRoutes } from './routes/port-orders'
import { hardwareOrderRoutes } from './routes/hardware-orders'
import { faxRoutes } from './routes/faxes'
import { e911Routes } from './routes/e911'
import { emergencyAddressRoutes } from './routes/emergency-addresses'
import { webrtcRoutes } from './routes/webrtc'

export function createApp(deps: GatewayDeps) {
  const table = new RouteTable()
  // One count of failed authentications per client address, across API keys, sessions, operator tokens and download links.
  // RATE_LIMIT_PER_SECOND=0 turns rate limiting off, this count included (the fuzz tests send thousands of bad credentials).
  const authFailures = createFailureLimiter({ off: deps.config.rateLimitPerSecond === 0 })
  const base = requestContext(deps, table, authFailures)
  const app = new Elysia({ normalize: false })
    .use(errorHandler(deps, table))
    .use(provisioningRoutes(deps))
    .use(base)
    .use(operatorRoutes(deps, authFailures))
    .use(accountRoutes(deps, base))
    .use(sessionRoutes(deps, base))
    .use(userRoutes(deps, base))
    .use(extensionRoutes(deps, base))
    .use(ringGroupRoutes(deps, base))
    .use(scheduleRoutes(deps, base))
    .use(dialPlanRoutes(deps, base))
    .use(sharedVoicemailBoxRoutes(deps, base))
    .use(voiceAppRoutes(deps, base))
    .use(aiAgentRoutes(deps, base))
    .use(queueRoutes(deps, base))
    .use(locationRoutes(deps, base))
    .use(phoneNumberRoutes(deps, base))
    .use(userProfileRoutes(deps, base))
    .use(presenceRoutes(deps, base))
    .use(qualityRoutes(deps, base))
    .use(auditLogRoutes(deps, base))
    .use(webhookEndpointRoutes(deps, base))
    .use(eventRoutes(deps, base))
    .use(testHelperRoutes(deps, base))
    .use(callRoutes(deps, base))
    .use(voicemailRoutes(deps, base))
    .use(mediaRoutes(deps, base))
    .use(deviceRoutes(deps, base))
    .use(deskphoneRoutes(deps, base))
    .use(dectBaseRoutes(deps, base))
    .use(buttonTemplateRoutes(deps, base))
    .use(downloadRoutes(deps, authFailures))

  // Outside the typed chain: one more link there and App's type is too deep for tsc.
  app.use(docsPageRoutes())
  app.use(portOrderRoutes(deps, base))
  app.use(hardwareOrderRoutes(deps, base))
  app.use(faxRoutes(deps, base))
  app.use(e911Routes(deps, base))
  app.use(emergencyAddressRoutes(deps, base))
  app.use(webrtcRoutes(deps, base))
  let openapi: string | undefined
  app.get('/v1/openapi.json', ({ set }) => {
    set.headers['content-type'] = 'application/json'
    return (openapi ??= JSON.stringify(buildOpenApi(app, deps.config.baseUrl)))
  })
  table.load(app)
  return app
}

export type App = ReturnType<typeof createApp>
