/**
 * The request the bench load processes repeat: POST a JSON body as a sandbox key
 * (+ Service-Account) and take the created id from a 200, tallying statuses and the
 * first error. Times are performance.timeOrigin + performance.now() (ms).
 */
export const benchNow = () => performance.timeOrigin + performance.now()

export interface PostTally {
  statuses: Record<string, number>
  failed: number
  firstError?: string
}

export const newTally = (): PostTally => ({ statuses: {}, failed: 0 })

/** The created resource's id and when its 200 arrived, or undefined (tallied as failed). */
export async function postForId(tally: PostTally, url: string, key: string, account: string, body: unknown): Promise<{ id: string; at: number } | undefined> {
  try {
    const res = await fetch(url, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'service-account': account, 'content-type': 'application/json' },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(30_000),
    })
    const text = await res.text()
    const at = benchNow()
    tally.statuses[res.status] = (tally.statuses[res.status] ?? 0) + 1
    if (res.status !== 200) {
      tally.failed++
      tally.firstError ??= `${res.status} ${text.slice(0, 300)}`
      return undefined
    }
    return { id: (JSON.parse(text) as { id: string }).id, at }
  } catch (e) {
    tally.failed++
    tally.statuses.error = (tally.statuses.error ?? 0) + 1
    tally.firstError ??= e instanceof Error ? e.message : String(e)
    return undefined
  }
}
