/**
 * Group commit for writes that arrive independently (a REGISTER's binding, a call's
 * ring or answer): the items that come in while a write is under way are written
 * together by the next one (one statement, one commit, one WAL flush), and each
 * caller's promise resolves only once its item committed: nothing is acknowledged
 * before that. Phones register and call by the thousand per second; a statement and
 * a commit per item would bound both by the database's round trips.
 *
 * `write` gets the items in arrival order and answers one result per item, in the
 * same order. A batch that fails is written again item by item, so one bad item
 * cannot fail the others.
 */
export function writeBatcher<T, R>(write: (items: T[]) => Promise<R[]>, maxBatch = 512): (item: T) => Promise<R> {
  interface Pending {
    item: T
    resolve: (r: R) => void
    reject: (e: unknown) => void
  }
  const queue: Pending[] = []
  let flushing = false

  const commit = async (batch: Pending[]): Promise<void> => {
    let results: R[]
    try {
      results = await write(batch.map((p) => p.item))
    } catch (err) {
      if (batch.length === 1) return batch[0]!.reject(err)
      for (const p of batch) await commit([p])
      return
    }
    for (const [i, p] of batch.entries()) p.resolve(results[i]!)
  }

  const flush = async () => {
    try {
      while (queue.length > 0) await commit(queue.splice(0, maxBatch))
    } finally {
      flushing = false
    }
  }

  return (item: T): Promise<R> =>
    new Promise((resolve, reject) => {
      queue.push({ item, resolve, reject })
      if (flushing) return
      flushing = true
      // Items arriving in the same turn of the event loop go in the same statement.
      setImmediate(() => void flush())
    })
}
