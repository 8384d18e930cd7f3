/**
 * CANCEL on the server side (RFC 3261 §9.2): a raw UDP client rings a handler that
 * never answers by itself, then cancels. Time moves only with the manual clock.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { manualClock } from '../../src/clock'
import type { SipRequestHandler, SipResponseSpec } from './handler'
import { defaultSipHandler } from './handlers'
import { type SipServer, startSipServer } from './server'
import { request, type UdpPeer, udpPeer, unique, until } from './test-fixtures'
import { T1, T4, TRANSACTION_TIMEOUT } from './transactions'

const clock = manualClock()
let server: SipServer

interface Seen {
  toTag: string
  cancelled: AbortSignal
  calls: number
}
/** What each INVITE's handler saw, by Call-ID. */
const seen = new Map<string, Seen>()

/**
 * `ring…`: 180 through ctx.provisional, then waits until a CANCEL aborts it (and then
 * returns a 200, which must be ignored: the 487 went first).
 * `answer…`: 200 at once.
 */
const handler: SipRequestHandler = async (req, source, ctx) => {
  if (req.method !== 'INVITE' || !ctx) return defaultSipHandler(req, source)
  const entry = seen.get(req.callId) ?? { toTag: ctx.toTag, cancelled: ctx.cancelled, calls: 0 }
  entry.calls++
  seen.set(req.callId, entry)
  if (req.callId.startsWith('answer')) return { status: 200, headers: [['Contact', '<sip:service@127.0.0.1>']] }
  ctx.provisional({ status: 180 })
  // Ignored: not a 1xx.
  ctx.provisional({ status: 200 })
  return new Promise<SipResponseSpec>((resolve) => {
    ctx.cancelled.addEventListener('abort', () => resolve({ status: 200, headers: [['Contact', '<sip:late@127.0.0.1>']] }), { once: true })
  })
}

beforeAll(async () => {
  server = await startSipServer({ host: '127.0.0.1', port: 0, clock, handler })
})
afterAll(async () => {
  await server.stop()
})

function advance(ms: number) {
  clock.advance(ms)
  server.tick()
}
function drain() {
  for (let i = 0; i < 10 && server.pendingTimers > 0; i++) advance(TRANSACTION_TIMEOUT)
}

function header(text: string, name: string): string | undefined {
  const lower = name.toLowerCase()
  for (const line of text.slice(0, text.indexOf('\r\n\r\n')).split('\r\n').slice(1)) {
    const colon = line.indexOf(':')
    if (line.slice(0, colon).trim().toLowerCase() === lower) return line.slice(colon + 1).trim()
  }
  return undefined
}
const statusOf = (text: string) => text.slice(0, text.indexOf('\r\n'))
const tagOf = (value: string | undefined) => /;tag=([^;\s]+)/.exec(value ?? '')?.[1]
/** "487 INVITE": the status code and the CSeq method of a response. */
const summary = (text: string) => `${statusOf(text).split(' ')[1]} ${header(text, 'cseq')?.split(/\s+/)[1]}`

/** The ACK of a non-2xx final response: the INVITE's branch, the response's To. */
const ackFor = (invite: string, response: string) =>
  invite
    .replace(/^INVITE /, 'ACK ')
    .replace('1 INVITE', '1 ACK')
    .replace(/\r\nTo: [^\r]*/, `\r\nTo: ${header(response, 'to')}`)

/** Proves every response the server already sent has arrived: an OPTIONS is answered after them (one socket, in order). */
async function fence(peer: UdpPeer) {
  const before = peer.received.length
  peer.send(request('OPTIONS', { port: peer.port }), server.udpPort)
  await until(() => peer.received.length > before && peer.received.some((r, i) => i >= before && r.includes(' OPTIONS\r\n')), 'the fence')
  const at = peer.received.findIndex((r, i) => i >= before && r.includes(' OPTIONS\r\n'))
  peer.received.splice(at, 1)
}

describe('CANCEL of a ringing INVITE', () => {
  test('the CANCEL gets 200 and then the INVITE 487, the handler is told, and the ACK of the 487 stops its retransmissions', async () => {
    drain()
    const peer = await udpPeer()
    const id = `ring${unique()}`
    try {
      const invite = request('INVITE', { port: peer.port, id })
      peer.send(invite, server.udpPort)
      await until(() => peer.received.length === 2, '100 and 180')
      expect(peer.received.map(summary)).toEqual(['100 INVITE', '180 INVITE'])
      const state = seen.get(`${id}@127.0.0.1`)!
      expect(state.cancelled.aborted).toBe(false)
      // The 180 carries the To tag the final response will carry: the handler's ctx.toTag.
      expect(tagOf(header(peer.received[1]!, 'to'))).toBe(state.toTag)
      // The ringing INVITE is not retransmitted: 1xx are not resent by the server transaction.
      advance(T1 * 4)
      peer.send(request('CANCEL', { port: peer.port, id }), server.udpPort)
      await until(() => peer.received.length === 4, 'the 200 and the 487')
      expect(peer.received.slice(2).map(summary)).toEqual(['200 CANCEL', '487 INVITE'])
      expect(state.cancelled.aborted).toBe(true)
      const terminated = peer.received[3]!
      expect(statusOf(terminated)).toBe('SIP/2.0 487 Request Terminated')
      expect(tagOf(header(terminated, 'to'))).toBe(state.toTag)
      expect(header(terminated, 'via')).toContain(`branch=z9hG4bK${id}`)
      // The handler's late 200 (after the abort) is dropped.
      await fence(peer)
      expect(peer.received.length).toBe(4)
      // Timer G resends the 487 until the ACK.
      advance(T1)
      await until(() => peer.received.length === 5, 'the resent 487')
      expect(peer.received[4]).toBe(terminated)
      // A retransmitted CANCEL gets the same 200 again, and the handler is not called again.
      peer.send(request('CANCEL', { port: peer.port, id }), server.udpPort)
      await until(() => peer.received.length === 6, 'the resent 200 to CANCEL')
      expect(peer.received[5]).toBe(peer.received[2])
      peer.send(ackFor(invite, terminated), server.udpPort)
      await fence(peer)
      const count = peer.received.length
      for (const step of [2 * T1, 4 * T1, 8 * T1]) advance(step)
      await fence(peer)
      expect(peer.received.length).toBe(count)
      expect(state.calls).toBe(1)
      advance(T4)
      drain()
      expect(server.openTransactions).toBe(0)
    } finally {
      peer.close()
    }
  })

  test('a CANCEL matching nothing gets 481; one with another branch does not stop a ringing INVITE', async () => {
    drain()
    const peer = await udpPeer()
    const id = `ring${unique()}`
    try {
      peer.send(request('CANCEL', { port: peer.port }), server.udpPort)
      await until(() => peer.received.length === 1, 'the 481')
      expect(statusOf(peer.received[0]!)).toBe('SIP/2.0 481 Call/Transaction Does Not Exist')
      expect(summary(peer.received[0]!)).toBe('481 CANCEL')
      const invite = request('INVITE', { port: peer.port, id })
      peer.send(invite, server.udpPort)
      await until(() => peer.received.length === 3, '100 and 180')
      // Same Call-ID and tags, another branch: another transaction.
      peer.send(request('CANCEL', { port: peer.port, id }).replace(`branch=z9hG4bK${id}`, `branch=z9hG4bK${unique()}`), server.udpPort)
      await until(() => peer.received.length === 4, 'the second 481')
      expect(summary(peer.received[3]!)).toBe('481 CANCEL')
      const state = seen.get(`${id}@127.0.0.1`)!
      expect(state.cancelled.aborted).toBe(false)
      // The real CANCEL still works afterwards.
      peer.send(request('CANCEL', { port: peer.port, id }), server.udpPort)
      await until(() => peer.received.length === 6, '200 and 487')
      expect(peer.received.slice(4).map(summary)).toEqual(['200 CANCEL', '487 INVITE'])
      expect(state.cancelled.aborted).toBe(true)
      peer.send(ackFor(invite, peer.received[5]!), server.udpPort)
    } finally {
      peer.close()
    }
  })

  test('a CANCEL after the INVITE was answered gets 481, and the 200 stands (resent until its ACK, no 487)', async () => {
    drain()
    const peer = await udpPeer()
    const id = `answer${unique()}`
    try {
      const invite = request('INVITE', { port: peer.port, id })
      peer.send(invite, server.udpPort)
      await until(() => peer.received.length === 2, '100 and 200')
      const ok = peer.received[1]!
      expect(summary(ok)).toBe('200 INVITE')
      peer.send(request('CANCEL', { port: peer.port, id }), server.udpPort)
      await until(() => peer.received.length === 3, 'the answer to the CANCEL')
      expect(summary(peer.received[2]!)).toBe('481 CANCEL')
      expect(seen.get(`${id}@127.0.0.1`)!.cancelled.aborted).toBe(false)
      advance(T1)
      await until(() => peer.received.length === 4, 'the resent 200')
      expect(peer.received[3]).toBe(ok)
      // The 2xx's ACK (a new branch, matched by dialog).
      peer.send(ackFor(invite, ok).replace(`branch=z9hG4bK${id}`, `branch=z9hG4bK${unique()}`), server.udpPort)
      await fence(peer)
      advance(T1 * 8)
      await fence(peer)
      expect(peer.received.map(summary)).toEqual(['100 INVITE', '200 INVITE', '481 CANCEL', '200 INVITE'])
    } finally {
      peer.close()
    }
  })

  // RFC 3261 §9.2: "The To tag of the response to the CANCEL and the To tag in the response to
  // the original request SHOULD be the same."
  test('the 200 to the CANCEL carries the INVITE dialog To tag', async () => {
    drain()
    const peer = await udpPeer()
    const id = `ring${unique()}`
    try {
      const invite = request('INVITE', { port: peer.port, id })
      peer.send(invite, server.udpPort)
      await until(() => peer.received.length === 2, '100 and 180')
      peer.send(request('CANCEL', { port: peer.port, id }), server.udpPort)
      await until(() => peer.received.length === 4, '200 and 487')
      const [okCancel, terminated] = peer.received.slice(2)
      peer.send(ackFor(invite, terminated!), server.udpPort)
      expect(tagOf(header(okCancel!, 'to'))).toBe(tagOf(header(terminated!, 'to'))!)
    } finally {
      peer.close()
    }
  })
})
