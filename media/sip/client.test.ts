import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { manualClock } from '../../src/clock'
import { buildRequest, type OutgoingRequest } from './client'
import { defaultSipHandler } from './handlers'
import { type SipServer, startSipServer } from './server'
import { request, statusLines, tcpPeer, udpPeer, unique, until } from './test-fixtures'
import { T1, T2, T4, TRANSACTION_TIMEOUT } from './transactions'

const clock = manualClock()
let server: SipServer

beforeAll(async () => {
  server = await startSipServer({ host: '127.0.0.1', port: 0, clock, handler: defaultSipHandler })
})
afterAll(async () => {
  await server.stop()
})

function notify(id = unique()): OutgoingRequest {
  return {
    method: 'NOTIFY',
    uri: 'sip:1001@127.0.0.1',
    headers: [
      ['From', `<sip:pbx@127.0.0.1>;tag=n${id}`],
      ['To', `<sip:1001@127.0.0.1>;tag=p${id}`],
      ['Call-ID', `${id}@127.0.0.1`],
      ['CSeq', '2 NOTIFY'],
      ['Event', 'check-sync'],
      ['Subscription-State', 'terminated;reason=timeout'],
    ],
  }
}

/** What a phone answers to a request: its Via, From, To, Call-ID and CSeq copied. */
function answer(requestText: string, status: string): string {
  const copy = requestText.split('\r\n').filter((l) => /^(Via|From|To|Call-ID|CSeq):/i.test(l))
  return [`SIP/2.0 ${status}`, ...copy, 'Content-Length: 0', '', ''].join('\r\n')
}

describe('requests the server sends (non-INVITE client transactions)', () => {
  test('a NOTIFY over UDP carries our Via with a fresh branch and resolves with the final response', async () => {
    const phone = await udpPeer()
    try {
      const outcome = server.sendRequest({ transport: 'udp', address: '127.0.0.1', port: phone.port }, notify())
      await until(() => phone.received.length === 1, 'the NOTIFY')
      const sent = phone.received[0]!
      expect(sent).toStartWith('NOTIFY sip:1001@127.0.0.1 SIP/2.0\r\n')
      expect(sent).toMatch(new RegExp(`\\r\\nVia: SIP/2\\.0/UDP 127\\.0\\.0\\.1:${server.udpPort};branch=z9hG4bK[0-9a-f]{32};rport\\r\\n`))
      expect(sent).toContain('\r\nMax-Forwards: 70\r\n')
      phone.send(answer(sent, '100 Trying'), server.udpPort)
      phone.send(answer(sent, '200 OK'), server.udpPort)
      const result = await outcome
      expect(result.kind).toBe('response')
      if (result.kind === 'response') expect(result.status).toBe(200)
      // Timer K absorbs a retransmitted 200 for T4, then the transaction is gone.
      phone.send(answer(sent, '200 OK'), server.udpPort)
      expect(server.openClientTransactions).toBe(1)
      clock.advance(T4)
      server.tick()
      expect(server.openClientTransactions).toBe(0)
    } finally {
      phone.close()
    }
  })

  test('unanswered over UDP: retransmitted by Timer E (T1, doubling to T2), then Timer F gives up', async () => {
    const phone = await udpPeer()
    try {
      const outcome = server.sendRequest({ transport: 'udp', address: '127.0.0.1', port: phone.port }, notify())
      await until(() => phone.received.length === 1, 'the NOTIFY')
      const steps = [T1, 2 * T1, 4 * T1, T2, T2]
      for (const [i, step] of steps.entries()) {
        clock.advance(step)
        server.tick()
        await until(() => phone.received.length === i + 2, `retransmission ${i + 1}`)
      }
      expect(new Set(phone.received).size).toBe(1)
      clock.advance(TRANSACTION_TIMEOUT)
      server.tick()
      expect(await outcome).toEqual({ kind: 'timeout' })
      expect(server.openClientTransactions).toBe(0)
    } finally {
      phone.close()
    }
  })

  test('over TCP it goes down the connection the phone opened, and a TCP target without one is unreachable', async () => {
    const phone = await tcpPeer(server.tcpPort)
    try {
      phone.write(request('OPTIONS', { port: phone.port, transport: 'TCP' }))
      await until(() => statusLines(phone.text()).length === 1, 'the OPTIONS answer')
      const outcome = server.sendRequest({ transport: 'tcp', address: '127.0.0.1', port: phone.port }, notify())
      await until(() => phone.text().includes('NOTIFY sip:'), 'the NOTIFY')
      const sent = phone.text().slice(phone.text().indexOf('NOTIFY sip:'))
      expect(sent).toContain(`Via: SIP/2.0/TCP 127.0.0.1:${server.tcpPort};branch=`)
      phone.write(answer(sent, '202 Accepted'))
      const result = await outcome
      expect(result.kind === 'response' && result.status).toBe(202)
      expect(server.openClientTransactions).toBe(0)
      expect(await server.sendRequest({ transport: 'tcp', address: '127.0.0.1', port: 1 }, notify())).toEqual({ kind: 'unreachable' })
    } finally {
      phone.close()
    }
  })

  test.each([
    ['no Call-ID', { ...notify(), headers: notify().headers.filter(([n]) => n !== 'Call-ID') }],
    ['a CSeq of another method', { ...notify(), headers: [...notify().headers.filter(([n]) => n !== 'CSeq'), ['CSeq', '1 OPTIONS'] as const] }],
    ['a line break in a header', { ...notify(), headers: [...notify().headers, ['Subject', 'x\r\nVia: evil'] as const] }],
    ['an INVITE (the B2BUA sends those)', { ...notify(), method: 'INVITE' }],
  ])('refuses to build a request with %s', (_what, bad) => {
    expect(() => buildRequest(bad, 'SIP/2.0/UDP 127.0.0.1;branch=z9hG4bKx')).toThrow()
  })
})
