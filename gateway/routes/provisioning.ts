/**
 * /provisioning/{account}/{file}: where phones fetch their configuration files (the
 * account's `provisioning_base_url`). Served outside /v1 and authenticated by the
 * phone's own provisioning credentials, not by an API key. The work is the media
 * role's (media/provisioning), handed in by the composition root: gateway/ does not
 * import media/.
 *
 * Answered when the request arrives, before the API's per-request context (request
 * id, API authentication, query and body checks) that nothing here uses: phones
 * fetch by the thousand at once after a power cut, two requests per file.
 */
import { Elysia } from 'elysia'
import { ApiError } from '../../src/errors'
import type { GatewayDeps } from '../context'

const PREFIX = '/provisioning/'

/** Whether the URL's path is under /provisioning/, read without parsing the URL. */
function isProvisioningUrl(url: string): boolean {
  const pathStart = url.indexOf('/', url.indexOf('//') + 2)
  return pathStart > 0 && url.startsWith(PREFIX, pathStart)
}

export function provisioningRoutes(deps: GatewayDeps) {
  return new Elysia({ name: 'routes/provisioning' }).onRequest(({ request, server }) => {
    if (!isProvisioningUrl(request.url)) return
    if (!deps.provisioning) throw new ApiError(404, 'Provisioning is not served by this process.', 'not_found')
    return deps.provisioning(request, server?.requestIP(request)?.address ?? null)
  })
}
