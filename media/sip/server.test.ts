import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import fc from 'fast-check'
import { manualClock } from '../../src/clock'
import type { SipRequestHandler } from './handler'
import { composeHandlers, defaultSipHandler } from './handlers'
import { type SipServer, startSipServer } from './server'
import { T1, T2, T4, TRANSACTION_TIMEOUT } from './transactions'
import { loadCapture, request, statusLines, tcpPeer, udpPeer, unique, until } from './test-fixtures'

const clock = manualClock()
let server: SipServer
const calls: string[] = []
/** Handlers by Call-ID prefix, so each test shapes its own answers on one shared server. */
const behaviour: SipRequestHandler = async (req, source) => {
  calls.push(req.callId)
  if (req.callId.startsWith('throw')) throw new Error('handler exploded')
  if (req.callId.startsWith('hang')) return new Promise(() => {})
  if (req.method === 'INVITE' && req.callId.startsWith('ok'))
    return { status: 200, body: 'v=0\r\n', contentType: 'application/sdp', headers: [['Contact', '<sip:service@127.0.0.1>']] }
  if (req.method === 'INVITE' && req.callId.startsWith('busy')) return { status: 486 }
  if (req.method === 'REGISTER') return { status: 200, headers: [['Contact', `<sip:x@${source.address}>;expires=60`]] }
  return defaultSipHandler(req, source)
}

beforeAll(async () => {
  server = await startSipServer({ host: '127.0.0.1', port: 0, clock, handler: behaviour, maxTransactions: 50 })
})
afterAll(async () => {
  await server.stop()
})

/** Advances the manual clock past every protocol timer and fires them. */
function drain() {
  for (let i = 0; i < 10 && server.pendingTimers > 0; i++) {
    clock.advance(TRANSACTION_TIMEOUT)
    server.tick()
  }
}

const countCalls = (callId: string) => calls.filter((c) => c === callId).length

describe('answers over each transport', () => {
  test('OPTIONS over UDP gets 200 with Allow, back at the source port with received and rport', async () => {
    const peer = await udpPeer()
    try {
      peer.send(request('OPTIONS', { port: peer.port }), server.udpPort)
      await until(() => peer.received.length === 1, 'the 200')
      const answer = peer.received[0]!
      expect(answer).toStartWith('SIP/2.0 200 OK\r\n')
      expect(answer).toContain(`;rport=${peer.port};received=127.0.0.1\r\n`)
      expect(answer).toContain('\r\nAllow: OPTIONS\r\n')
      expect(answer).toMatch(/\r\nTo: <sip:service@127\.0\.0\.1>;tag=[0-9a-f]{16}\r\n/)
    } finally {
      peer.close()
    }
  })

  test('OPTIONS over TCP gets 200 on the same connection', async () => {
    const peer = await tcpPeer(server.tcpPort)
    try {
      peer.write(request('OPTIONS', { port: peer.port, transport: 'TCP' }))
      await until(() => statusLines(peer.text()).length === 1, 'the 200')
      expect(statusLines(peer.text())).toEqual(['SIP/2.0 200 OK'])
    } finally {
      peer.close()
    }
  })

  test('captured phone requests get the default answers: OPTIONS 200, REGISTER 405 with Allow, INVITE 100 then 405', async () => {
    const server2 = await startSipServer({ host: '127.0.0.1', port: 0, clock, handler: defaultSipHandler })
    const peer = await udpPeer()
    try {
      for (const name of ['polycom-options.sip', 'yealink-register.sip', 'baresip-invite.sip']) peer.send(loadCapture(name), server2.udpPort)
      await until(() => peer.received.length === 4, 'four answers')
      expect(peer.received.map((r) => r.slice(0, r.indexOf('\r\n'))).sort()).toEqual([
        'SIP/2.0 100 Trying',
        'SIP/2.0 200 OK',
        'SIP/2.0 405 Method Not Allowed',
        'SIP/2.0 405 Method Not Allowed',
      ])
    } finally {
      peer.close()
      await server2.stop()
    }
  })
})

describe('extensions a request requires (RFC 3261 §8.2.2.3)', () => {
  test('a Require this server does not support gets 420 with the tags in Unsupported, and the handler is not called; CANCEL is exempt', async () => {
    const peer = await udpPeer()
    try {
      const invite = unique()
      peer.send(request('INVITE', { port: peer.port, id: `ok-${invite}`, extra: ['Require: replaces, 100rel', 'Require: timer'] }), server.udpPort)
      const register = unique()
      peer.send(request('REGISTER', { port: peer.port, id: register, extra: ['Require: outbound'] }), server.udpPort)
      const garbage = unique()
      peer.send(request('OPTIONS', { port: peer.port, id: garbage, extra: ['Require: "quoted", ok'] }), server.udpPort)
      const plain = unique()
      peer.send(request('OPTIONS', { port: peer.port, id: plain, extra: ['Supported: replaces, timer'] }), server.udpPort)
      const answerTo = (id: string) => peer.received.find((r) => r.includes(`Call-ID: ${id}@`) && !r.startsWith('SIP/2.0 100'))
      await until(() => [`ok-${invite}`, register, garbage, plain].every((id) => answerTo(id)), 'four final answers')
      expect(answerTo(`ok-${invite}`)).toStartWith('SIP/2.0 420 Bad Extension')
      expect(answerTo(`ok-${invite}`)).toContain('Unsupported: replaces, 100rel, timer\r\n')
      expect(answerTo(register)).toStartWith('SIP/2.0 420 ')
      expect(answerTo(register)).toContain('Unsupported: outbound\r\n')
      expect(answerTo(garbage)).toStartWith('SIP/2.0 400 ')
      expect(answerTo(plain)).toStartWith('SIP/2.0 200 ')
      expect(countCalls(`ok-${invite}@127.0.0.1`) + countCalls(`${register}@127.0.0.1`) + countCalls(`${garbage}@127.0.0.1`)).toBe(0)
    } finally {
      peer.close()
    }
  })
})

describe('server transactions', () => {
  test('a retransmitted REGISTER gets the same response and calls the handler once (UDP)', async () => {
    const peer = await udpPeer()
    const id = unique()
    try {
      const register = request('REGISTER', { port: peer.port, id })
      peer.send(register, server.udpPort)
      await until(() => peer.received.length === 1, 'the 200')
      peer.send(register, server.udpPort)
      peer.send(register, server.udpPort)
      await until(() => peer.received.length === 3, 'the resent 200s')
      expect(new Set(peer.received).size).toBe(1)
      expect(countCalls(`${id}@127.0.0.1`)).toBe(1)
      expect(server.openTransactions).toBeGreaterThan(0)
      // Timer J: the transaction is forgotten 64*T1 later, and the request is new again.
      drain()
      expect(server.openTransactions).toBe(0)
      peer.send(register, server.udpPort)
      await until(() => peer.received.length === 4, 'a fresh 200')
      expect(countCalls(`${id}@127.0.0.1`)).toBe(2)
    } finally {
      peer.close()
    }
  })

  test('over TCP a non-INVITE transaction ends with its final response (Timer J = 0)', async () => {
    const peer = await tcpPeer(server.tcpPort)
    try {
      drain()
      peer.write(request('REGISTER', { port: peer.port, transport: 'TCP' }))
      await until(() => statusLines(peer.text()).length === 1, 'the 200')
      expect(server.openTransactions).toBe(0)
    } finally {
      peer.close()
    }
  })

  test('a retransmission while the handler is still working is absorbed', async () => {
    const peer = await udpPeer()
    const id = `hang${unique()}`
    try {
      const options = request('OPTIONS', { port: peer.port, id })
      peer.send(options, server.udpPort)
      await until(() => countCalls(`${id}@127.0.0.1`) === 1, 'the handler call')
      peer.send(options, server.udpPort)
      // The next datagram's answer proves the retransmission was handled (loopback keeps order) and nothing was sent for it.
      peer.send(request('OPTIONS', { port: peer.port }), server.udpPort)
      await until(() => peer.received.length === 1, 'the other 200')
      expect(peer.received[0]).toStartWith('SIP/2.0 200 OK')
      expect(countCalls(`${id}@127.0.0.1`)).toBe(1)
      // A handler that never answers does not hold its transaction for ever.
      drain()
      expect(server.openTransactions).toBe(0)
    } finally {
      peer.close()
    }
  })

  test('INVITE: 100 Trying at once, a final error retransmitted by Timer G until the ACK, then absorbed for T4 (Timer I)', async () => {
    const peer = await udpPeer()
    const id = `busy${unique()}`
    try {
      drain()
      const invite = request('INVITE', { port: peer.port, id })
      peer.send(invite, server.udpPort)
      await until(() => peer.received.length === 2, '100 and 486')
      expect(peer.received.map((r) => r.slice(0, 14))).toEqual(['SIP/2.0 100 Tr', 'SIP/2.0 486 Bu'])
      const busy = peer.received[1]!
      for (const step of [T1, 2 * T1, 4 * T1]) {
        clock.advance(step)
        server.tick()
      }
      await until(() => peer.received.length === 5, 'three retransmissions')
      expect(peer.received.slice(2)).toEqual([busy, busy, busy])
      // The ACK of a non-2xx has the INVITE's branch and the response's To tag.
      const toLine = /\r\nTo: [^\r]*/.exec(busy)![0]
      const ack = invite
        .replace('INVITE sip', 'ACK sip')
        .replace('1 INVITE', '1 ACK')
        .replace(/\r\nTo: [^\r]*/, toLine)
      peer.send(ack, server.udpPort)
      peer.send(invite, server.udpPort) // confirmed: a late INVITE copy is absorbed too
      peer.send(request('OPTIONS', { port: peer.port }), server.udpPort)
      await until(() => peer.received.length === 6, 'the OPTIONS answer')
      expect(peer.received[5]).toStartWith('SIP/2.0 200 OK')
      clock.advance(T2)
      server.tick()
      expect(countCalls(`${id}@127.0.0.1`)).toBe(1)
      clock.advance(T4)
      server.tick()
      drain()
      expect(server.openTransactions).toBe(0)
    } finally {
      peer.close()
    }
  })

  test('INVITE: a 2xx is retransmitted until its ACK, matched by dialog although the ACK has a new branch', async () => {
    const peer = await udpPeer()
    const id = `ok${unique()}`
    try {
      drain()
      const invite = request('INVITE', { port: peer.port, id })
      peer.send(invite, server.udpPort)
      await until(() => peer.received.length === 2, '100 and 200')
      const ok = peer.received[1]!
      expect(ok).toStartWith('SIP/2.0 200 OK')
      expect(ok).toContain('\r\nContent-Type: application/sdp\r\nContent-Length: 5\r\n\r\nv=0\r\n')
      clock.advance(T1)
      server.tick()
      await until(() => peer.received.length === 3, 'one retransmission')
      const toLine = /\r\nTo: [^\r]*/.exec(ok)![0]
      const ack = invite
        .replace('INVITE sip', 'ACK sip')
        .replace('1 INVITE', '1 ACK')
        .replace(/\r\nTo: [^\r]*/, toLine)
        .replace(`branch=z9hG4bK${id}`, `branch=z9hG4bK${unique()}`)
      peer.send(ack, server.udpPort)
      peer.send(request('OPTIONS', { port: peer.port }), server.udpPort)
      await until(() => peer.received.length === 4, 'the OPTIONS answer')
      // Only the OPTIONS transaction is left, and the 2xx is no longer resent.
      expect(server.openTransactions).toBe(1)
      clock.advance(T2)
      server.tick()
      peer.send(request('OPTIONS', { port: peer.port }), server.udpPort)
      await until(() => peer.received.length === 5, 'the second OPTIONS answer')
      expect(peer.received.filter((r) => r.includes(' INVITE\r\n')).length).toBe(3)
    } finally {
      peer.close()
    }
  })

  test('INVITE without an ACK: Timer H ends the transaction', async () => {
    const peer = await udpPeer()
    try {
      drain()
      peer.send(request('INVITE', { port: peer.port, id: `busy${unique()}` }), server.udpPort)
      await until(() => peer.received.length === 2, '100 and 486')
      expect(server.openTransactions).toBe(1)
      drain()
      expect(server.openTransactions).toBe(0)
    } finally {
      peer.close()
    }
  })

  test('a handler that throws gets the caller a 500, and is called once', async () => {
    const peer = await udpPeer()
    const id = `throw${unique()}`
    try {
      const options = request('OPTIONS', { port: peer.port, id })
      peer.send(options, server.udpPort)
      await until(() => peer.received.length === 1, 'the 500')
      peer.send(options, server.udpPort)
      await until(() => peer.received.length === 2, 'the resent 500')
      expect(peer.received.map((r) => r.slice(0, r.indexOf('\r\n')))).toEqual(['SIP/2.0 500 Internal Server Error', 'SIP/2.0 500 Internal Server Error'])
      expect(countCalls(`${id}@127.0.0.1`)).toBe(1)
    } finally {
      peer.close()
    }
  })

  test('at the transaction bound the oldest answered transaction makes room: memory stays bounded and service goes on', async () => {
    const small = await startSipServer({ host: '127.0.0.1', port: 0, clock, handler: behaviour, maxTransactions: 3 })
    const peer = await udpPeer()
    try {
      for (let i = 0; i < 6; i++) {
        peer.send(request('OPTIONS', { port: peer.port }), small.udpPort)
        await until(() => peer.received.length === i + 1, `answer ${i + 1}`)
      }
      expect(peer.received.every((r) => r.startsWith('SIP/2.0 200 OK'))).toBe(true)
      expect(small.openTransactions).toBe(3)
    } finally {
      peer.close()
      await small.stop()
    }
  })

  test('when every transaction is still being handled, new requests get a stateless 503 with Retry-After', async () => {
    const small = await startSipServer({ host: '127.0.0.1', port: 0, clock, handler: behaviour, maxTransactions: 3 })
    const peer = await udpPeer()
    try {
      for (let i = 0; i < 5; i++) peer.send(request('OPTIONS', { port: peer.port, id: `hang${unique()}` }), small.udpPort)
      await until(() => peer.received.length === 2, 'two 503s')
      expect(peer.received.every((r) => r.startsWith('SIP/2.0 503 Service Unavailable\r\n') && r.includes('\r\nRetry-After: 5\r\n'))).toBe(true)
      expect(small.openTransactions).toBe(3)
    } finally {
      peer.close()
      await small.stop()
    }
  })
})

describe('bad input', () => {
  test('a request with a bad header gets 400 with a Warning; a stray response and noise get nothing', async () => {
    const peer = await udpPeer()
    try {
      const good = request('OPTIONS', { port: peer.port })
      peer.send(good.replace('Max-Forwards: 70', 'Max-Forwards 70'), server.udpPort)
      peer.send(good.replace('OPTIONS sip:service@127.0.0.1 SIP/2.0', 'SIP/2.0 200 OK'), server.udpPort)
      peer.send('\x00\x01garbage', server.udpPort)
      peer.send('\r\n\r\n', server.udpPort)
      peer.send(request('OPTIONS', { port: peer.port }), server.udpPort)
      await until(() => peer.received.length === 2, 'two answers')
      expect(peer.received[0]).toStartWith('SIP/2.0 400 Bad Request\r\n')
      expect(peer.received[0]).toContain('\r\nWarning: 399 sip-server "malformed header line 7"\r\n')
      expect(peer.received[1]).toStartWith('SIP/2.0 200 OK\r\n')
    } finally {
      peer.close()
    }
  })

  test('TCP: two messages in one packet get two answers; one split in three gets one', async () => {
    const peer = await tcpPeer(server.tcpPort)
    try {
      const a = request('OPTIONS', { port: peer.port, transport: 'TCP' })
      const b = request('OPTIONS', { port: peer.port, transport: 'TCP', body: 'hello', extra: ['Content-Type: text/plain'] })
      peer.write(a + b)
      await until(() => statusLines(peer.text()).length === 2, 'two answers')
      const c = Buffer.from(request('OPTIONS', { port: peer.port, transport: 'TCP', body: 'split body' }))
      peer.write(c.subarray(0, 10))
      await Bun.sleep(1)
      peer.write(c.subarray(10, c.length - 3))
      await Bun.sleep(1)
      peer.write(c.subarray(c.length - 3))
      await until(() => statusLines(peer.text()).length === 3, 'the third answer')
      peer.write('\r\n\r\n')
      await until(() => peer.text().endsWith('\r\n\r\n\r\n'), 'the keep-alive pong')
      expect(statusLines(peer.text())).toEqual(['SIP/2.0 200 OK', 'SIP/2.0 200 OK', 'SIP/2.0 200 OK'])
      expect(peer.closed()).toBe(false)
    } finally {
      peer.close()
    }
  })

  test('TCP: a message without Content-Length gets 400 and the connection is closed; so is one sending endless headers', async () => {
    const noLength = await tcpPeer(server.tcpPort)
    const endless = await tcpPeer(server.tcpPort)
    try {
      noLength.write(request('OPTIONS', { port: noLength.port, transport: 'TCP' }).replace('Content-Length: 0\r\n', ''))
      await until(() => noLength.closed(), 'the close')
      expect(statusLines(noLength.text())).toEqual(['SIP/2.0 400 Bad Request'])
      const line = `X-Filler: ${'y'.repeat(1000)}\r\n`
      endless.write(`OPTIONS sip:a@b SIP/2.0\r\n`)
      for (let i = 0; i < 70 && !endless.closed(); i++) {
        endless.write(line)
        await Bun.sleep(0)
      }
      await until(() => endless.closed(), 'the close')
      expect(endless.text()).toBe('')
    } finally {
      noLength.close()
      endless.close()
    }
  })
})

describe('bounds', () => {
  test('TCP connections beyond the bound are closed at once; those within keep working', async () => {
    const small = await startSipServer({ host: '127.0.0.1', port: 0, clock, handler: behaviour, maxConnections: 1 })
    const first = await tcpPeer(small.tcpPort)
    try {
      first.write(request('OPTIONS', { port: first.port, transport: 'TCP' }))
      await until(() => statusLines(first.text()).length === 1, 'the first connection answered')
      const second = await tcpPeer(small.tcpPort)
      await until(() => second.closed(), 'the second connection closed')
      first.write(request('OPTIONS', { port: first.port, transport: 'TCP' }))
      await until(() => statusLines(first.text()).length === 2, 'the first connection still answered')
    } finally {
      first.close()
      await small.stop()
    }
  })
})

describe('TCP timeouts', () => {
  test('a connection that sends no whole message in time is closed; one that did stays until it falls silent', async () => {
    const timed = await startSipServer({ host: '127.0.0.1', port: 0, clock, handler: behaviour, tcpFirstMessageTimeoutS: 1, tcpIdleTimeoutS: 3 })
    const trickling = await tcpPeer(timed.tcpPort)
    const talking = await tcpPeer(timed.tcpPort)
    const head = request('OPTIONS', { port: trickling.port, transport: 'TCP' })
    let sent = 0
    // A byte every 200 ms keeps the idle timeout from firing, never a whole message.
    const trickle = setInterval(() => trickling.write(head.charAt(sent++)), 200)
    try {
      talking.write(request('OPTIONS', { port: talking.port, transport: 'TCP' }))
      await until(() => statusLines(talking.text()).length === 1, 'the talking connection answered')
      await until(() => trickling.closed(), 'the trickling connection closed', 1000)
      expect(sent).toBeLessThan(head.length)
      // Past the first-message deadline, and alive while it keeps sending keepalives, for longer than the idle timeout.
      for (let i = 0; i < 8; i++) {
        await Bun.sleep(500)
        talking.write('\r\n\r\n')
        expect(talking.closed()).toBe(false)
      }
      const silentSince = performance.now()
      await until(() => talking.closed(), 'the silent connection closed', 6000)
      // Closed for its silence, never before the idle timeout (Bun's own socket timeout could fire up to 4 s early).
      expect(performance.now() - silentSince).toBeGreaterThan(2900)
    } finally {
      clearInterval(trickle)
      trickling.close()
      talking.close()
      await timed.stop()
    }
  }, 25_000)
})

describe('fuzz against the running server', () => {
  const base = request('OPTIONS', { port: 5999 })
  const lines = base.split('\r\n')
  const nasty = fc.oneof(
    fc.uint8Array({ minLength: 1, maxLength: 400 }),
    fc.string({ maxLength: 300 }).map((s) => Buffer.from(s)),
    // Truncated
    fc.nat({ max: base.length }).map((n) => Buffer.from(base.slice(0, n))),
    // Wrong Content-Length
    fc.integer({ min: -5, max: 100_000 }).map((n) => Buffer.from(base.replace('Content-Length: 0', `Content-Length: ${n}`))),
    // Bad or extra header lines, unknown methods
    fc.tuple(fc.nat({ max: lines.length - 3 }), fc.string({ maxLength: 60 }), fc.stringMatching(/^[A-Z]{1,10}$/)).map(([at, junk, method]) => {
      const copy = [...lines]
      copy.splice(1 + at, 1, junk)
      return Buffer.from(
        copy
          .join('\r\n')
          .replace(/^OPTIONS/, method)
          .replace(/ OPTIONS\r\n/, ` ${method}\r\n`),
      )
    }),
    // Oversized
    fc.constant(Buffer.from(base.replace('Content-Length: 0', 'Content-Length: 70000') + 'z'.repeat(70_000))),
  )

  test('no crash over UDP or TCP, the server still answers, and every transaction drains once the clock moves on', async () => {
    const peer = await udpPeer()
    try {
      await fc.assert(
        fc.asyncProperty(nasty, fc.boolean(), async (b, overTcp) => {
          if (overTcp) {
            const conn = await tcpPeer(server.tcpPort)
            conn.write(b)
            conn.close()
          } else if (b.length < 65_000) peer.send(b, server.udpPort)
        }),
        { numRuns: 300 },
      )
      peer.received.length = 0
      peer.send(request('OPTIONS', { port: peer.port }), server.udpPort)
      await until(() => peer.received.some((r) => r.startsWith('SIP/2.0 200 OK') && r.includes(`rport=${peer.port}`)), 'a 200 after the fuzz')
      const conn = await tcpPeer(server.tcpPort)
      conn.write(request('OPTIONS', { port: conn.port, transport: 'TCP' }))
      await until(() => statusLines(conn.text()).length === 1, 'a TCP 200 after the fuzz')
      conn.close()
      drain()
      expect(server.openTransactions).toBe(0)
    } finally {
      peer.close()
    }
  })
})

describe('composing handlers', () => {
  test('a composed method is served by its handler and listed in Allow', async () => {
    const handler = composeHandlers({ REGISTER: () => ({ status: 200 }) }, defaultSipHandler)
    const composed = await startSipServer({ host: '127.0.0.1', port: 0, clock, handler })
    const peer = await udpPeer()
    try {
      peer.send(request('REGISTER', { port: peer.port }), composed.udpPort)
      peer.send(request('OPTIONS', { port: peer.port }), composed.udpPort)
      peer.send(request('FROB', { port: peer.port }), composed.udpPort)
      peer.send(request('SUBSCRIBE', { port: peer.port }), composed.udpPort)
      await until(() => peer.received.length === 4, 'four answers')
      const [register, options, frob, subscribe] = peer.received
      expect(register).toStartWith('SIP/2.0 200 OK')
      expect(options).toContain('\r\nAllow: OPTIONS, REGISTER\r\n')
      expect(frob).toStartWith('SIP/2.0 501 Not Implemented')
      expect(subscribe).toStartWith('SIP/2.0 405 Method Not Allowed')
      expect(subscribe).toContain('\r\nAllow: OPTIONS, REGISTER\r\n')
    } finally {
      peer.close()
      await composed.stop()
    }
  })
})
