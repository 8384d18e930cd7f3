/**
 * GET /downloads/{token}: the audio a signed URL grants, until it expires. Served
 * outside /v1: whoever holds the URL fetches without an API key (the URL is the
 * credential; src/storage/download-urls signs it), while every /v1 operation takes
 * a bearer credential. The link is served only while a record (recording, voicemail,
 * greeting, audio clip, file) still names the blob.
 */
import { Elysia } from 'elysia'
import { ApiError } from '../../src/errors'
import { blobStillReferenced } from '../../src/services/data-lifecycle/blob-deletions'
import { DOWNLOAD_PATH_PREFIX, verifyDownload } from '../../src/storage/download-urls'
import type { GatewayDeps } from '../context'
import type { FailureLimiter } from '../plugins/rate-limit'

export function downloadRoutes(deps: GatewayDeps, authFailures: FailureLimiter) {
  return new Elysia({ name: 'routes/downloads' }).get(`${DOWNLOAD_PATH_PREFIX}:token`, async ({ params, request, server }) => {
    // The link is the credential: a forged one counts as a failed authentication of the address.
    const ip = server?.requestIP(request)?.address ?? null
    authFailures.check(ip)
    const v = verifyDownload(deps.downloadKey, params.token, deps.clock.wallNow())
    if (!v.ok && v.reason !== 'expired') authFailures.failed(ip)
    if (!v.ok)
      throw v.reason === 'expired'
        ? new ApiError(410, 'This download link has expired.', 'download_expired')
        : new ApiError(404, 'Not a valid download link.', 'not_found')
    // A link outlives nothing it grants: once no record names the blob (deleted, or its
    // account deleted and the blob not yet swept) the link is dead.
    if (!(await blobStillReferenced(deps.db, v.grant.key))) throw new ApiError(404, 'The file no longer exists.', 'not_found')
    const blob = await deps.storage.get(v.grant.key)
    if (!blob) throw new ApiError(404, 'The file no longer exists.', 'not_found')
    return new Response(blob.bytes, {
      status: 200,
      headers: { 'content-type': v.grant.contentType, 'content-length': String(blob.bytes.byteLength), 'cache-control': 'private, no-store' },
    })
  })
}
