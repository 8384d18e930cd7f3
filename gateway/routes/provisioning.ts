/**
 * /provisioning/{account}/{file}: where phones fetch their configuration files (the
 * account's `provisioning_base_url`). Served outside /v1 and authenticated by the
 * phone's own provisioning credentials, not by an API key. The work is the media
 * role's (media/provisioning), handed in by the composition root: gateway/ does not
 * import media/. Phones only GET (Elysia answers HEAD with the same route).
 */
import { Elysia } from 'elysia'
import { ApiError } from '../../src/errors'
import type { GatewayDeps } from '../context'

export function provisioningRoutes(deps: GatewayDeps) {
  return new Elysia({ name: 'routes/provisioning' }).get('/provisioning/*', ({ request, server }) => {
    if (!deps.provisioning) throw new ApiError(404, 'Provisioning is not served by this process.', 'not_found')
    return deps.provisioning(request, server?.requestIP(request)?.address ?? null)
  })
}
