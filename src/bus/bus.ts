/**
 * The bus carries live messages between roles: outbox wake-ups and events for
 * the event stream. In-process in embedded mode; NATS when NATS_URL is set, so a
 * gateway sees what any worker publishes. Postgres stays the source of truth:
 * nothing on the bus is needed to recover from a crash.
 */
export type Unsubscribe = () => void

export interface Bus {
  /** Fire and forget: never throws, also after close (the message is then dropped). */
  publish(subject: string, data: string): void
  subscribe(subject: string, handler: (data: string) => void): Unsubscribe
  close(): Promise<void>
}

export function inProcessBus(): Bus {
  const subs = new Map<string, Set<(data: string) => void>>()
  return {
    publish(subject, data) {
      const handlers = subs.get(subject)
      if (!handlers) return
      for (const h of [...handlers]) {
        // Handlers run after the publisher's turn, as they would over a network.
        queueMicrotask(() => {
          try {
            h(data)
          } catch {
            // A subscriber's failure is its own; the publisher is not told.
          }
        })
      }
    },
    subscribe(subject, handler) {
      let set = subs.get(subject)
      if (!set) subs.set(subject, (set = new Set()))
      set.add(handler)
      return () => {
        set!.delete(handler)
        if (set!.size === 0) subs.delete(subject)
      }
    },
    async close() {
      subs.clear()
    },
  }
}
