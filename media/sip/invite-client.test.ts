/**
 * INVITE client transactions (RFC 3261 §17.1.1, RFC 6026) through a running SIP
 * server: `sendInvite` rings a raw UDP (or TCP) socket that plays the callee and
 * answers by hand. Time moves only with the manual clock and `tick()`.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import type { IncomingResponseMessage } from 'sip.js/lib/core/messages/incoming-response-message.js'
import { manualClock } from '../../src/clock'
import type { OutgoingRequest } from './client'
import { defaultSipHandler } from './handlers'
import type { SipSource } from './handler'
import type { InviteOutcome } from './invite-client'
import { type SipServer, startSipServer } from './server'
import { request, statusLines, tcpPeer, type UdpPeer, udpPeer, unique, until } from './test-fixtures'
import { T1, TRANSACTION_TIMEOUT } from './transactions'

const clock = manualClock()
let server: SipServer

beforeAll(async () => {
  server = await startSipServer({ host: '127.0.0.1', port: 0, clock, handler: defaultSipHandler })
})
afterAll(async () => {
  await server.stop()
})

/** Moves the clock on and fires what is due. */
function advance(ms: number) {
  clock.advance(ms)
  server.tick()
}

/** Fires every protocol timer left over from earlier tests. */
function drain() {
  for (let i = 0; i < 10 && server.pendingTimers > 0; i++) advance(TRANSACTION_TIMEOUT)
}

const SDP = 'v=0\r\no=- 1 1 IN IP4 127.0.0.1\r\ns=-\r\nc=IN IP4 127.0.0.1\r\nt=0 0\r\nm=audio 40000 RTP/AVP 0 101\r\na=rtpmap:101 telephone-event/8000\r\n'

function inviteTo(port: number, id = unique()): OutgoingRequest {
  return {
    method: 'INVITE',
    uri: `sip:1002@127.0.0.1:${port}`,
    headers: [
      ['From', `"Front Desk" <sip:1001@127.0.0.1>;tag=b${id}`],
      ['To', '<sip:1002@127.0.0.1>'],
      ['Call-ID', `${id}@127.0.0.1`],
      ['CSeq', '7 INVITE'],
      ['Contact', '<sip:b2bua@127.0.0.1>'],
    ],
    body: SDP,
    contentType: 'application/sdp',
  }
}

const udpTarget = (peer: { port: number }): SipSource => ({ transport: 'udp', address: '127.0.0.1', port: peer.port })

/** The first value of a header in a raw message. */
function header(text: string, name: string): string | undefined {
  const head = text.slice(0, text.indexOf('\r\n\r\n'))
  const lower = name.toLowerCase()
  for (const line of head.split('\r\n').slice(1)) {
    const colon = line.indexOf(':')
    if (line.slice(0, colon).trim().toLowerCase() === lower) return line.slice(colon + 1).trim()
  }
  return undefined
}
const startLine = (text: string) => text.slice(0, text.indexOf('\r\n'))
const branchOf = (text: string) => /;branch=([^;\s]+)/.exec(header(text, 'via') ?? '')?.[1]
const tagOf = (value: string | undefined) => /;tag=([^;\s]+)/.exec(value ?? '')?.[1]

/** What a callee answers to the INVITE: Via, From, Call-ID and CSeq copied, To with its tag. */
function answer(inviteText: string, status: string, toTag: string, body = ''): string {
  const copy = inviteText
    .slice(0, inviteText.indexOf('\r\n\r\n'))
    .split('\r\n')
    .filter((l) => /^(Via|From|Call-ID|CSeq):/i.test(l))
  const to = `To: ${header(inviteText, 'to')}${status.startsWith('100') ? '' : `;tag=${toTag}`}`
  const extra = body ? ['Contact: <sip:1002@127.0.0.1>', 'Content-Type: application/sdp'] : []
  return [`SIP/2.0 ${status}`, ...copy, to, ...extra, `Content-Length: ${Buffer.byteLength(body)}`, '', body].join('\r\n')
}

/**
 * Proves that nothing else is on its way: a marker sent by the server after
 * everything it already sent arrives (loopback keeps the order of one socket's
 * datagrams), and is then taken out.
 */
async function fence(peer: UdpPeer) {
  const marker = `FENCE ${unique()}`
  server.sendRaw(Buffer.from(marker), udpTarget(peer))
  await until(() => peer.received.includes(marker), 'the fence')
  peer.received.splice(peer.received.indexOf(marker), 1)
}

/** The outcome if it has settled, without waiting for it. */
async function settled(outcome: Promise<InviteOutcome>): Promise<InviteOutcome | 'pending'> {
  return Promise.race([outcome, new Promise<'pending'>((r) => setTimeout(() => r('pending'), 0))])
}

describe('INVITE client transaction over UDP', () => {
  test('Timer A retransmits the INVITE at T1, 2T1, 4T1... (7 sends by 63*T1), Timer B ends it with timeout at 64*T1', async () => {
    drain()
    const callee = await udpPeer()
    try {
      const handle = server.sendInvite(udpTarget(callee), inviteTo(callee.port))
      await until(() => callee.received.length === 1, 'the INVITE')
      const sent = callee.received[0]!
      expect(startLine(sent)).toBe(`INVITE sip:1002@127.0.0.1:${callee.port} SIP/2.0`)
      expect(branchOf(sent)).toBe(handle.branch)
      expect(header(sent, 'via')).toBe(`SIP/2.0/UDP 127.0.0.1:${server.udpPort};branch=${handle.branch};rport`)
      expect(header(sent, 'cseq')).toBe('7 INVITE')
      expect(header(sent, 'content-type')).toBe('application/sdp')
      expect(sent.endsWith(SDP)).toBe(true)
      // Just before each interval nothing; at it, one more copy.
      let interval = T1
      for (let n = 2; n <= 7; n++) {
        advance(interval - 1)
        await fence(callee)
        expect(callee.received.length).toBe(n - 1)
        advance(1)
        await until(() => callee.received.length === n, `retransmission ${n - 1}`)
        interval *= 2
      }
      // 63*T1 have passed; the next copy would be at 127*T1, Timer B fires at 64*T1.
      expect(new Set(callee.received).size).toBe(1)
      expect(await settled(handle.outcome)).toBe('pending')
      advance(T1 - 1)
      expect(await settled(handle.outcome)).toBe('pending')
      advance(1)
      expect(await handle.outcome).toEqual({ kind: 'timeout' })
      advance(TRANSACTION_TIMEOUT * 2)
      await fence(callee)
      expect(callee.received.length).toBe(7)
      // A response after Timer B belongs to nothing: not acknowledged.
      callee.send(answer(sent, '486 Busy Here', 'late'), server.udpPort)
      callee.send(request('OPTIONS', { port: callee.port }), server.udpPort)
      await until(() => callee.received.length === 8, 'the OPTIONS answer')
      expect(callee.received[7]).toStartWith('SIP/2.0 200 OK')
    } finally {
      callee.close()
    }
  })

  test('a 100 stops Timer A without reaching the hook; a 180 reaches onProvisional; with no final answer Timer B still ends it', async () => {
    drain()
    const callee = await udpPeer()
    try {
      const provisional: IncomingResponseMessage[] = []
      const handle = server.sendInvite(udpTarget(callee), inviteTo(callee.port), { onProvisional: (r) => provisional.push(r) })
      await until(() => callee.received.length === 1, 'the INVITE')
      const sent = callee.received[0]!
      callee.send(answer(sent, '100 Trying', ''), server.udpPort)
      // The 100 is processed before the OPTIONS (same socket, in order), whose answer proves it.
      callee.send(request('OPTIONS', { port: callee.port }), server.udpPort)
      await until(() => callee.received.length === 2, 'the OPTIONS answer')
      callee.received.length = 1
      expect(provisional).toEqual([])
      for (let i = 0; i < 6; i++) advance(T1 * 2 ** i)
      await fence(callee)
      expect(callee.received.length).toBe(1)
      callee.send(answer(sent, '180 Ringing', 'callee1'), server.udpPort)
      await until(() => provisional.length === 1, 'onProvisional')
      expect(provisional[0]!.statusCode).toBe(180)
      expect(provisional[0]!.toTag).toBe('callee1')
      // A 183 goes up too.
      callee.send(answer(sent, '183 Session Progress', 'callee1'), server.udpPort)
      await until(() => provisional.length === 2, 'the 183')
      // Documented here (invite-client.ts): Timer B also ends a transaction that only rang.
      advance(TRANSACTION_TIMEOUT)
      expect(await handle.outcome).toEqual({ kind: 'timeout' })
      await fence(callee)
      expect(callee.received.length).toBe(1)
    } finally {
      callee.close()
    }
  })

  test('180 then 200: answered, no ACK from the transaction; a retransmitted 200 goes to onRetransmitted2xx until 64*T1', async () => {
    drain()
    const callee = await udpPeer()
    try {
      const provisional: number[] = []
      const again: IncomingResponseMessage[] = []
      const handle = server.sendInvite(udpTarget(callee), inviteTo(callee.port), {
        onProvisional: (r) => provisional.push(r.statusCode ?? 0),
        onRetransmitted2xx: (r) => again.push(r),
      })
      await until(() => callee.received.length === 1, 'the INVITE')
      const sent = callee.received[0]!
      callee.send(answer(sent, '180 Ringing', 'c2'), server.udpPort)
      await until(() => provisional.length === 1, 'the 180')
      const ok = answer(sent, '200 OK', 'c2', SDP)
      callee.send(ok, server.udpPort)
      const outcome = await handle.outcome
      expect(outcome.kind).toBe('answered')
      if (outcome.kind !== 'answered') return
      expect(outcome.response.statusCode).toBe(200)
      expect(outcome.response.toTag).toBe('c2')
      expect(outcome.response.body).toBe(SDP)
      callee.send(ok, server.udpPort)
      await until(() => again.length === 1, 'onRetransmitted2xx')
      expect(again[0]!.toTag).toBe('c2')
      // A 180 arriving late, after the 2xx, is not passed up.
      callee.send(answer(sent, '180 Ringing', 'c2'), server.udpPort)
      callee.send(ok, server.udpPort)
      await until(() => again.length === 2, 'the second retransmitted 200')
      expect(provisional).toEqual([180])
      // The 2xx's ACK is the dialog's (sent by the B2BUA): the transaction sent nothing, and does not retransmit.
      advance(T1 * 8)
      await fence(callee)
      expect(callee.received.length).toBe(1)
      // Accepted ends at 64*T1: after that a 2xx copy is a stray.
      advance(TRANSACTION_TIMEOUT)
      callee.send(ok, server.udpPort)
      callee.send(request('OPTIONS', { port: callee.port }), server.udpPort)
      await until(() => callee.received.length === 2, 'the OPTIONS answer')
      expect(again.length).toBe(2)
      cancelHasNoEffect(handle)
    } finally {
      callee.close()
    }
  })

  test('486: rejected, and the transaction ACKs it (INVITE branch, To tag of the 486, CSeq n ACK); a retransmitted 486 is ACKed again', async () => {
    drain()
    const callee = await udpPeer()
    try {
      const handle = server.sendInvite(udpTarget(callee), inviteTo(callee.port))
      await until(() => callee.received.length === 1, 'the INVITE')
      const sent = callee.received[0]!
      const busy = answer(sent, '486 Busy Here', 'busy1')
      callee.send(busy, server.udpPort)
      const outcome = await handle.outcome
      expect(outcome.kind === 'rejected' && outcome.status).toBe(486)
      await until(() => callee.received.length === 2, 'the ACK')
      const ack = callee.received[1]!
      expect(startLine(ack)).toBe(`ACK sip:1002@127.0.0.1:${callee.port} SIP/2.0`)
      expect(branchOf(ack)).toBe(handle.branch)
      expect(header(ack, 'via')).toBe(header(sent, 'via'))
      expect(header(ack, 'cseq')).toBe('7 ACK')
      expect(tagOf(header(ack, 'to'))).toBe('busy1')
      expect(header(ack, 'from')).toBe(header(sent, 'from'))
      expect(header(ack, 'call-id')).toBe(header(sent, 'call-id'))
      expect(header(ack, 'content-length')).toBe('0')
      expect(header(ack, 'contact')).toBeUndefined()
      // No more INVITE copies once it was answered.
      advance(T1 * 4)
      callee.send(busy, server.udpPort)
      await until(() => callee.received.length === 3, 'the second ACK')
      expect(callee.received[2]).toBe(ack)
      expect(await handle.outcome).toBe(outcome)
      // Timer D (32 s over UDP): after it, a copy of the 486 is a stray and not acknowledged.
      advance(32_000)
      callee.send(busy, server.udpPort)
      callee.send(request('OPTIONS', { port: callee.port }), server.udpPort)
      await until(() => callee.received.length === 4, 'the OPTIONS answer')
      expect(callee.received[3]).toStartWith('SIP/2.0 200 OK')
      cancelHasNoEffect(handle)
    } finally {
      callee.close()
    }
  })
})

/** cancel() after the final response: nothing at all (checked by the tests' fences and counts). */
function cancelHasNoEffect(handle: { cancel(): void }) {
  handle.cancel()
  handle.cancel()
}

describe('cancel() (RFC 3261 §9.1)', () => {
  test('before any provisional response it sends nothing; once the 180 comes, the CANCEL goes out with the INVITE branch and headers', async () => {
    drain()
    const callee = await udpPeer()
    try {
      const handle = server.sendInvite(udpTarget(callee), inviteTo(callee.port))
      await until(() => callee.received.length === 1, 'the INVITE')
      const sent = callee.received[0]!
      handle.cancel()
      handle.cancel()
      await fence(callee)
      expect(callee.received.length).toBe(1)
      callee.send(answer(sent, '180 Ringing', 'r1'), server.udpPort)
      await until(() => callee.received.length === 2, 'the CANCEL')
      const cancel = callee.received[1]!
      expect(startLine(cancel)).toBe(startLine(sent).replace('INVITE', 'CANCEL'))
      expect(branchOf(cancel)).toBe(handle.branch)
      expect(header(cancel, 'via')).toBe(header(sent, 'via'))
      expect(header(cancel, 'cseq')).toBe('7 CANCEL')
      for (const name of ['from', 'to', 'call-id']) expect(header(cancel, name)).toBe(header(sent, name)!)
      expect(header(cancel, 'to')).not.toContain('tag=')
      expect(header(cancel, 'content-length')).toBe('0')
      // Another 180 does not send a second CANCEL.
      callee.send(answer(sent, '180 Ringing', 'r1'), server.udpPort)
      // The callee: 200 to the CANCEL, 487 to the INVITE (which the transaction ACKs).
      callee.send(answer(cancel, '200 OK', 'r1'), server.udpPort)
      callee.send(answer(sent, '487 Request Terminated', 'r1'), server.udpPort)
      const outcome = await handle.outcome
      expect(outcome.kind === 'rejected' && outcome.status).toBe(487)
      await until(() => callee.received.length === 3, 'the ACK of the 487')
      expect(startLine(callee.received[2]!)).toStartWith('ACK ')
      expect(branchOf(callee.received[2]!)).toBe(handle.branch)
      // The CANCEL's 200 ended its non-INVITE transaction: no retransmission of it.
      advance(T1 * 8)
      await fence(callee)
      expect(callee.received.length).toBe(3)
      expect(server.openClientTransactions).toBe(1) // Timer K still absorbs copies of the CANCEL's 200
      drain()
      expect(server.openClientTransactions).toBe(0)
    } finally {
      callee.close()
    }
  })

  test('after a 1xx the CANCEL goes out at once; unanswered, Timer E retransmits it', async () => {
    drain()
    const callee = await udpPeer()
    try {
      const handle = server.sendInvite(udpTarget(callee), inviteTo(callee.port))
      await until(() => callee.received.length === 1, 'the INVITE')
      const sent = callee.received[0]!
      callee.send(answer(sent, '180 Ringing', 'r2'), server.udpPort)
      callee.send(request('OPTIONS', { port: callee.port }), server.udpPort)
      await until(() => callee.received.length === 2, 'the OPTIONS answer')
      handle.cancel()
      await until(() => callee.received.length === 3, 'the CANCEL')
      const cancel = callee.received[2]!
      expect(startLine(cancel)).toStartWith('CANCEL ')
      expect(branchOf(cancel)).toBe(handle.branch)
      handle.cancel()
      advance(T1)
      await until(() => callee.received.length === 4, 'the CANCEL again')
      expect(callee.received[3]).toBe(cancel)
      callee.send(answer(cancel, '200 OK', 'r2'), server.udpPort)
      callee.send(answer(sent, '487 Request Terminated', 'r2'), server.udpPort)
      expect((await handle.outcome).kind).toBe('rejected')
      await until(() => callee.received.length === 5, 'the ACK')
      expect(header(callee.received[4]!, 'cseq')).toBe('7 ACK')
    } finally {
      callee.close()
    }
  })

  test('a 200 that crosses the CANCEL still answers the call', async () => {
    drain()
    const callee = await udpPeer()
    try {
      const handle = server.sendInvite(udpTarget(callee), inviteTo(callee.port))
      await until(() => callee.received.length === 1, 'the INVITE')
      const sent = callee.received[0]!
      callee.send(answer(sent, '180 Ringing', 'r3'), server.udpPort)
      callee.send(request('OPTIONS', { port: callee.port }), server.udpPort)
      await until(() => callee.received.length === 2, 'the OPTIONS answer')
      handle.cancel()
      await until(() => callee.received.length === 3, 'the CANCEL')
      callee.send(answer(callee.received[2]!, '200 OK', 'r3'), server.udpPort)
      callee.send(answer(sent, '200 OK', 'r3', SDP), server.udpPort)
      const outcome = await handle.outcome
      expect(outcome.kind).toBe('answered')
    } finally {
      callee.close()
    }
  })

  test('after the final response cancel() does nothing', async () => {
    drain()
    const callee = await udpPeer()
    try {
      const handle = server.sendInvite(udpTarget(callee), inviteTo(callee.port))
      await until(() => callee.received.length === 1, 'the INVITE')
      const sent = callee.received[0]!
      callee.send(answer(sent, '180 Ringing', 'r4'), server.udpPort)
      callee.send(answer(sent, '603 Decline', 'r4'), server.udpPort)
      expect((await handle.outcome).kind).toBe('rejected')
      await until(() => callee.received.length === 2, 'the ACK')
      handle.cancel()
      advance(T1 * 4)
      await fence(callee)
      expect(callee.received.map(startLine)).toEqual([startLine(sent), startLine(sent).replace('INVITE', 'ACK')])
    } finally {
      callee.close()
    }
  })

  // UDP reorders: a provisional response may arrive after the final one. §9.1: a CANCEL SHOULD
  // NOT be sent once the request got its final response, even if cancel() was asked for earlier.
  test('a cancel() wanted before any response is not sent when a late 180 follows the final response', async () => {
    drain()
    const callee = await udpPeer()
    try {
      const handle = server.sendInvite(udpTarget(callee), inviteTo(callee.port))
      await until(() => callee.received.length === 1, 'the INVITE')
      const sent = callee.received[0]!
      handle.cancel()
      callee.send(answer(sent, '486 Busy Here', 'r5'), server.udpPort)
      expect((await handle.outcome).kind).toBe('rejected')
      await until(() => callee.received.length === 2, 'the ACK')
      callee.send(answer(sent, '180 Ringing', 'r5'), server.udpPort)
      callee.send(request('OPTIONS', { port: callee.port }), server.udpPort)
      await until(() => callee.received.some((r) => r.startsWith('SIP/2.0 200 OK')), 'the OPTIONS answer')
      await fence(callee)
      expect(callee.received.filter((r) => r.startsWith('CANCEL ')).length).toBe(0)
    } finally {
      callee.close()
    }
  })
})

describe('INVITE client transaction over TCP', () => {
  test('down the connection the callee opened: no Timer A, a 486 ACKed on the same connection; a TCP target without a connection is unreachable', async () => {
    drain()
    const callee = await tcpPeer(server.tcpPort)
    try {
      callee.write(request('OPTIONS', { port: callee.port, transport: 'TCP' }))
      await until(() => statusLines(callee.text()).length === 1, 'the OPTIONS answer')
      const target: SipSource = { transport: 'tcp', address: '127.0.0.1', port: callee.port }
      const handle = server.sendInvite(target, { ...inviteTo(callee.port), body: undefined, contentType: undefined })
      await until(() => callee.text().includes('INVITE sip:'), 'the INVITE')
      const sent = callee.text().slice(callee.text().indexOf('INVITE sip:'))
      expect(header(sent, 'via')).toBe(`SIP/2.0/TCP 127.0.0.1:${server.tcpPort};branch=${handle.branch};rport`)
      advance(T1 * 8)
      // One INVITE only (a reliable transport is not retransmitted on).
      callee.write(request('OPTIONS', { port: callee.port, transport: 'TCP' }))
      await until(() => statusLines(callee.text()).length === 2, 'the second OPTIONS answer')
      expect(callee.text().split('INVITE sip:').length).toBe(2)
      callee.write(answer(sent, '486 Busy Here', 't1'))
      const outcome = await handle.outcome
      expect(outcome.kind === 'rejected' && outcome.status).toBe(486)
      await until(() => callee.text().includes('ACK sip:'), 'the ACK')
      const ack = callee.text().slice(callee.text().indexOf('ACK sip:'))
      expect(branchOf(ack)).toBe(handle.branch)
      expect(tagOf(header(ack, 'to'))).toBe('t1')
      // Timer D is 0 over TCP: a copy of the 486 is a stray, not ACKed.
      callee.write(answer(sent, '486 Busy Here', 't1'))
      callee.write(request('OPTIONS', { port: callee.port, transport: 'TCP' }))
      await until(() => statusLines(callee.text()).length === 3, 'the third OPTIONS answer')
      expect(callee.text().split('ACK sip:').length).toBe(2)

      const nowhere = server.sendInvite({ transport: 'tcp', address: '127.0.0.1', port: 1 }, inviteTo(1))
      expect(await nowhere.outcome).toEqual({ kind: 'unreachable' })
      nowhere.cancel()
    } finally {
      callee.close()
    }
  })
})
