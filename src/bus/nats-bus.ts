import { connect, StringCodec, type NatsConnection } from 'nats'
import type { Logger } from '../logger'
import type { Bus } from './bus'

const sc = StringCodec()

export async function natsBus(url: string, log: Logger): Promise<Bus> {
  const nc: NatsConnection = await connect({ servers: url, name: 'business-voice', maxReconnectAttempts: -1 })
  nc.closed().then((err) => {
    if (err) log.error({ err }, 'NATS connection closed with an error')
  })
  return {
    publish(subject, data) {
      // Live messages are hints (Postgres is the truth): one published while the
      // connection closes at shutdown is dropped, never thrown at a timer that sent it.
      if (nc.isClosed() || nc.isDraining()) return
      try {
        nc.publish(subject, sc.encode(data))
      } catch (err) {
        log.warn({ err, subject }, 'NATS publish failed; the message is dropped')
      }
    },
    subscribe(subject, handler) {
      const sub = nc.subscribe(subject, {
        callback: (err, msg) => {
          if (err) return log.warn({ err, subject }, 'NATS subscription error')
          try {
            handler(sc.decode(msg.data))
          } catch (e) {
            log.warn({ err: e, subject }, 'bus handler failed')
          }
        },
      })
      return () => sub.unsubscribe()
    },
    async close() {
      await nc.drain().catch(() => nc.close())
    },
  }
}
