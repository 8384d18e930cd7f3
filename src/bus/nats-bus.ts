import { connect, StringCodec, type NatsConnection } from 'nats'
import type { Logger } from '../logger'
import type { Bus } from './bus'

const sc = StringCodec()

/**
 * The subject a bus subject (`voice.<what>`) travels on: under the cluster's own
 * prefix, as the actors' subjects and shard leases are (actors/workers.ts). Two
 * deployments on one NATS server (or two test databases) then hear none of each
 * other's messages: a SIP password guesser counted against one deployment does not
 * block the same address at the other, an outbox wake-up does not make the other poll.
 * (`bus` takes the place of an actor kind in `voice.<cluster>.<kind>.…`: no kind may be named so.)
 */
export function clusterSubject(cluster: string, subject: string): string {
  return `voice.${cluster}.bus.${subject.startsWith('voice.') ? subject.slice('voice.'.length) : subject}`
}

export async function natsBus(url: string, log: Logger, opts: { cluster: string }): Promise<Bus> {
  const nc: NatsConnection = await connect({ servers: url, name: 'business-voice', maxReconnectAttempts: -1 })
  const on = (subject: string) => clusterSubject(opts.cluster, subject)
  nc.closed().then((err) => {
    if (err) log.error({ err }, 'NATS connection closed with an error')
  })
  return {
    publish(subject, data) {
      // Live messages are hints (Postgres is the truth): one published while the
      // connection closes at shutdown is dropped, never thrown at a timer that sent it.
      if (nc.isClosed() || nc.isDraining()) return
      try {
        nc.publish(on(subject), sc.encode(data))
      } catch (err) {
        log.warn({ err, subject }, 'NATS publish failed; the message is dropped')
      }
    },
    subscribe(subject, handler) {
      const sub = nc.subscribe(on(subject), {
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
