/**
 * The media role's side of check-sync: a notice on the (in-process) bus becomes a
 * NOTIFY from the real SIP server to each binding, where its REGISTER came from, over
 * UDP or down the phone's own TCP connection. Phones are plain sockets on 127.0.0.1;
 * protocol time runs on a manual clock.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { inProcessBus } from '../../src/bus/bus'
import { manualClock } from '../../src/clock'
import { defaultSipHandler } from '../sip/handlers'
import { type SipServer, startSipServer } from '../sip/server'
import { tcpPeer, udpPeer, until } from '../sip/test-fixtures'
import { TRANSACTION_TIMEOUT } from '../sip/transactions'
import {
  CHECK_SYNC_NOTIFY_SUBJECT,
  type CheckSyncNotice,
  type CheckSyncOutcome,
  type CheckSyncTarget,
  checkSyncPublisher,
  startCheckSyncNotifier,
} from './check-sync-notify'

const clock = manualClock('2026-06-01T09:00:00.000Z')
const bus = inProcessBus()
const publish = checkSyncPublisher(bus)
const outcomes: { device: string; contact: string; outcome: CheckSyncOutcome }[] = []
let server: SipServer
let stopNotifier: () => void

beforeAll(async () => {
  server = await startSipServer({ host: '127.0.0.1', port: 0, clock, handler: defaultSipHandler })
  stopNotifier = startCheckSyncNotifier({
    bus,
    sip: server,
    host: '127.0.0.1',
    onOutcome: (n, t, outcome) => void outcomes.push({ device: n.device, contact: t.contact, outcome }),
  })
})
afterAll(async () => {
  stopNotifier()
  await server.stop()
  await bus.close()
})

let devices = 0
const notice = (targets: CheckSyncTarget[]): CheckSyncNotice => ({ device: `dev_notify${++devices}`, at: clock.now().toISOString(), targets })
const target = (port: number, transport: CheckSyncTarget['transport'] = 'udp'): CheckSyncTarget => ({
  username: 'u1',
  // The phone's own idea of its address (behind NAT): never where the NOTIFY goes.
  contact: 'sip:u1@192.0.2.10:5062',
  transport,
  source_address: '127.0.0.1',
  source_port: port,
})
const outcomeOf = (device: string) =>
  until(() => outcomes.some((o) => o.device === device), `the outcome for ${device}`).then(() => outcomes.find((o) => o.device === device)!.outcome)

/** A phone's answer: Via, From, To, Call-ID and CSeq copied. */
function answer(requestText: string, status: string): string {
  const copy = requestText.split('\r\n').filter((l) => /^(Via|From|To|Call-ID|CSeq):/i.test(l))
  return [`SIP/2.0 ${status}`, ...copy, 'Content-Length: 0', '', ''].join('\r\n')
}
const header = (text: string, name: string) => new RegExp(`\\r\\n${name}: ([^\\r]*)\\r\\n`, 'i').exec(text)?.[1]

describe('check-sync NOTIFY from the media role', () => {
  test('a notice becomes a NOTIFY to where the REGISTER came from, with Event check-sync; the phone answers 200', async () => {
    const phone = await udpPeer()
    try {
      const n = notice([target(phone.port)])
      publish(n)
      await until(() => phone.received.length === 1, 'the NOTIFY')
      const sent = phone.received[0]!
      expect(sent).toStartWith('NOTIFY sip:u1@192.0.2.10:5062 SIP/2.0\r\n')
      expect(header(sent, 'Event')).toBe('check-sync;reboot=false')
      expect(header(sent, 'Subscription-State')).toBe('terminated')
      expect(header(sent, 'To')).toBe('<sip:u1@192.0.2.10:5062>')
      expect(header(sent, 'CSeq')).toBe('1 NOTIFY')
      expect(header(sent, 'Contact')).toBe(`<sip:provisioning@127.0.0.1:${server.udpPort}>`)
      expect(header(sent, 'From')).toMatch(/^<sip:provisioning@127\.0\.0\.1>;tag=[0-9a-f]+$/)
      expect(header(sent, 'Via')).toStartWith(`SIP/2.0/UDP 127.0.0.1:${server.udpPort};branch=z9hG4bK`)
      phone.send(answer(sent, '200 OK'), server.udpPort)
      const outcome = await outcomeOf(n.device)
      expect(outcome.kind === 'response' && outcome.status).toBe(200)
    } finally {
      phone.close()
    }
  })

  test('every binding of the device gets its own NOTIFY (its own Call-ID)', async () => {
    const [a, b] = [await udpPeer(), await udpPeer()]
    try {
      publish(notice([target(a.port), { ...target(b.port), username: 'u2', contact: 'sip:u2@192.0.2.10:5062' }]))
      await until(() => a.received.length === 1 && b.received.length === 1, 'both NOTIFYs')
      expect(b.received[0]).toStartWith('NOTIFY sip:u2@192.0.2.10:5062 SIP/2.0\r\n')
      expect(header(a.received[0]!, 'Call-ID')).not.toBe(header(b.received[0]!, 'Call-ID'))
    } finally {
      a.close()
      b.close()
    }
  })

  test('a phone registered over TCP gets its NOTIFY down the connection it opened', async () => {
    const phone = await tcpPeer(server.tcpPort)
    try {
      // The server knows the connection once the phone has sent on it.
      phone.write(
        `OPTIONS sip:service@127.0.0.1 SIP/2.0\r\nVia: SIP/2.0/TCP 127.0.0.1:${phone.port};branch=z9hG4bKopt${devices}\r\n` +
          `From: <sip:u1@127.0.0.1>;tag=o1\r\nTo: <sip:service@127.0.0.1>\r\nCall-ID: opt${devices}@127.0.0.1\r\nCSeq: 1 OPTIONS\r\nMax-Forwards: 70\r\nContent-Length: 0\r\n\r\n`,
      )
      await until(() => phone.text().includes('SIP/2.0 200'), 'the OPTIONS answer')
      const n = notice([target(phone.port, 'tcp')])
      publish(n)
      await until(() => phone.text().includes('NOTIFY '), 'the NOTIFY over TCP')
      const sent = phone.text().slice(phone.text().indexOf('NOTIFY '))
      expect(header(sent, 'Via')).toStartWith(`SIP/2.0/TCP 127.0.0.1:${server.tcpPort};branch=`)
      expect(header(sent, 'Contact')).toBe(`<sip:provisioning@127.0.0.1:${server.tcpPort};transport=tcp>`)
      phone.write(answer(sent, '200 OK'))
      const outcome = await outcomeOf(n.device)
      expect(outcome.kind === 'response' && outcome.status).toBe(200)
    } finally {
      phone.close()
    }
  })

  test('no TCP connection from the phone, or a WebSocket binding: nothing can be sent, and that is the outcome', async () => {
    const tcp = notice([target(9, 'tcp')])
    const ws = notice([target(9, 'ws')])
    publish(tcp)
    publish(ws)
    expect(await outcomeOf(tcp.device)).toEqual({ kind: 'unreachable' })
    expect(await outcomeOf(ws.device)).toEqual({ kind: 'unsupported_transport' })
  })

  test('a phone that never answers: retransmitted, then Timer F gives up (timeout)', async () => {
    const phone = await udpPeer()
    try {
      const n = notice([target(phone.port)])
      publish(n)
      await until(() => phone.received.length === 1, 'the NOTIFY')
      clock.advance(TRANSACTION_TIMEOUT)
      server.tick()
      expect(await outcomeOf(n.device)).toEqual({ kind: 'timeout' })
      // Timer E retransmitted it at least once on the way.
      await until(() => phone.received.length > 1, 'a retransmission')
    } finally {
      phone.close()
    }
  })

  test('a message that is not a notice, or a contact that cannot be a Request-URI, sends nothing', async () => {
    const phone = await udpPeer()
    try {
      bus.publish(CHECK_SYNC_NOTIFY_SUBJECT, '{"device":"dev_x","targets":[{"contact":1}]}')
      bus.publish(CHECK_SYNC_NOTIFY_SUBJECT, 'not json')
      const bad = notice([{ ...target(phone.port), contact: 'sip:u1@192.0.2.10 :5062' }])
      publish(bad)
      expect((await outcomeOf(bad.device)).kind).toBe('invalid')
      // A later notice still goes out: the bad ones broke nothing.
      const good = notice([target(phone.port)])
      publish(good)
      await until(() => phone.received.length === 1, 'the good NOTIFY')
      phone.send(answer(phone.received[0]!, '200 OK'), server.udpPort)
      expect((await outcomeOf(good.device)).kind).toBe('response')
      expect(outcomes.some((o) => o.device === 'dev_x')).toBe(false)
    } finally {
      phone.close()
    }
  })
})
