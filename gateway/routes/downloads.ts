/**
 * GET /downloads/{token}: the audio a signed URL grants, until it expires. Served
 * outside /v1: whoever holds the URL fetches without an API key (the URL is the
 * credential; src/storage/download-urls signs it), while every /v1 operation takes
 * a bearer credential.
 */
import { Elysia } from 'elysia'
import { ApiError } from '../../src/errors'
import { DOWNLOAD_PATH_PREFIX, verifyDownload } from '../../src/storage/download-urls'
import type { GatewayDeps } from '../context'

export function downloadRoutes(deps: GatewayDeps) {
  return new Elysia({ name: 'routes/downloads' }).get(`${DOWNLOAD_PATH_PREFIX}:token`, async ({ params }) => {
    const v = verifyDownload(deps.downloadKey, params.token, deps.clock.now())
    if (!v.ok)
      throw v.reason === 'expired'
        ? new ApiError(410, 'This download link has expired.', 'download_expired')
        : new ApiError(404, 'Not a valid download link.', 'not_found')
    const blob = await deps.storage.get(v.grant.key)
    if (!blob) throw new ApiError(404, 'The file no longer exists.', 'not_found')
    return new Response(blob.bytes, {
      status: 200,
      headers: { 'content-type': v.grant.contentType, 'content-length': String(blob.bytes.byteLength), 'cache-control': 'private, no-store' },
    })
  })
}
