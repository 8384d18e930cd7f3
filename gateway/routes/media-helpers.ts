/** What the upload routes share: the audio converter of this process and the signing of download URLs. */
import { ApiError } from '../../src/errors'
import type { DownloadSigning } from '../../src/services/media/stored-audio'
import type { AudioConverter } from '../../src/services/media/telephony-audio'
import type { GatewayDeps } from '../context'

export function audioConverter(deps: GatewayDeps): AudioConverter {
  if (!deps.audio) throw new ApiError(503, 'This process cannot convert audio.')
  return deps.audio
}

export const signing = (deps: GatewayDeps): DownloadSigning => ({ key: deps.downloadKey, baseUrl: deps.config.baseUrl, now: deps.clock.wallNow() })

/** Runs a delete through `mutate`, then removes the blob it named once the row is gone for good. */
export async function deleteThenRemoveBlob(deps: GatewayDeps, run: (setKey: (key: string | null) => void) => Promise<Response>): Promise<Response> {
  let key: string | null = null
  const response = await run((k) => {
    key = k
  })
  if (key !== null && response.ok) await deps.storage.delete(key)
  return response
}
