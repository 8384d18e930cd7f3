/**
 * The typed client (client/) for end-to-end tests, held to the served document as
 * `t.call` is: every answer it receives is checked by the conformance checker of
 * the service that sent it (test/support/openapi-conformance.ts), and an answer
 * the document does not describe fails the request.
 */
import { createVoiceClient, type VoiceClient } from '../../client'
import { conformanceOf } from './openapi-conformance'
import type { TestService } from './service'

async function checkedFetch(request: Request): Promise<Response> {
  const res = await fetch(request)
  const text = await res.clone().text()
  const problems =
    (await conformanceOf(new URL(request.url).origin))?.check({
      method: request.method,
      url: request.url,
      status: res.status,
      contentType: res.headers.get('content-type'),
      text,
    }) ?? []
  if (problems.length > 0) throw new Error(`the answer does not conform to the OpenAPI document:\n${problems.join('\n')}`)
  return res
}

/** A client of `t` with these credentials (a key, and the account to act on). */
export function apiClient(t: Pick<TestService, 'baseUrl'>, auth: { key?: string; account?: string } = {}): VoiceClient {
  return createVoiceClient({ baseUrl: t.baseUrl, ...auth, fetch: checkedFetch })
}
