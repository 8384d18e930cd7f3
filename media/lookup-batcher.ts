/**
 * Lookups that arrive in the same turn of the event loop go to the database as one
 * query (the registrar's line by SIP username: phones register and call by the
 * thousand per second, and a statement per request costs the database and the
 * driver more than the few rows it returns). A batch that fails is asked again key
 * by key, so one bad key cannot fail the others' lookups.
 */
export function lookupBatcher<K, V>(fetch: (keys: K[]) => Promise<Map<K, V>>, maxBatch = 256): (key: K) => Promise<V | undefined> {
  let waiting = new Map<K, { resolve: (v: V | undefined) => void; reject: (e: unknown) => void }[]>()
  let scheduled = false

  const settle = async (batch: Map<K, { resolve: (v: V | undefined) => void; reject: (e: unknown) => void }[]>) => {
    let found: Map<K, V>
    try {
      found = await fetch([...batch.keys()])
    } catch (err) {
      if (batch.size === 1) {
        for (const w of [...batch.values()][0]!) w.reject(err)
        return
      }
      for (const [key, waiters] of batch) await settle(new Map([[key, waiters]]))
      return
    }
    for (const [key, waiters] of batch) for (const w of waiters) w.resolve(found.get(key))
  }

  const flush = () => {
    scheduled = false
    const all = waiting
    waiting = new Map()
    let batch = new Map<K, { resolve: (v: V | undefined) => void; reject: (e: unknown) => void }[]>()
    for (const [key, waiters] of all) {
      batch.set(key, waiters)
      if (batch.size >= maxBatch) {
        void settle(batch)
        batch = new Map()
      }
    }
    if (batch.size > 0) void settle(batch)
  }

  return (key) =>
    new Promise((resolve, reject) => {
      const waiters = waiting.get(key)
      if (waiters) waiters.push({ resolve, reject })
      else waiting.set(key, [{ resolve, reject }])
      if (scheduled) return
      scheduled = true
      setImmediate(flush)
    })
}
