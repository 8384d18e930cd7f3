/**
 * Forwarding one event to a local URL as a webhook delivery: a POST of the exact
 * body, with the headers the service's delivery sends (src/events/delivery/attempt.ts)
 * and its signature (src/events/signing.ts), redirects not followed.
 */
/** The local answer: its status, or why there was none. */
export type ForwardResult = { status: number; error?: undefined } | { status?: undefined; error: string }

export async function forward(url: string, body: string, headers: Record<string, string>, timeoutMs: number, signal: AbortSignal): Promise<ForwardResult> {
  const timeout = AbortSignal.timeout(timeoutMs)
  try {
    const res = await fetch(url, { method: 'POST', body, headers, redirect: 'manual', signal: AbortSignal.any([signal, timeout]) })
    await res.arrayBuffer().catch(() => {})
    return { status: res.status }
  } catch (e) {
    if (timeout.aborted) return { error: `no answer within ${timeoutMs} ms` }
    if (signal.aborted) return { error: 'stopped' }
    return { error: (e as Error).message }
  }
}

/** One line per event: time, type, id, and the local answer. */
export function eventLine(at: Date, type: string, id: string, result: ForwardResult, url: string): string {
  const answer = result.status !== undefined ? `[${result.status}] POST ${url}` : `[error] POST ${url}: ${result.error}`
  return `${at.toISOString()}  ${type.padEnd(32)}  ${id}  ${answer}\n`
}
