/**
 * Runs work one after another per key (a call id): effects that follow a
 * committed step keep the order of the steps. A failure is reported and does not
 * stop the key's later work.
 */
export function keyedSerialQueue(onError?: (err: unknown) => void) {
  const tails = new Map<string, Promise<void>>()
  return {
    run(key: string, work: () => Promise<unknown>): Promise<void> {
      const next = (tails.get(key) ?? Promise.resolve()).then(work).then(
        () => {},
        (err) => onError?.(err),
      )
      tails.set(key, next)
      void next.then(() => {
        if (tails.get(key) === next) tails.delete(key)
      })
      return next
    },
    /** Resolves once every piece of work queued for the key so far is done. */
    settled: (key: string): Promise<void> => tails.get(key) ?? Promise.resolve(),
  }
}
