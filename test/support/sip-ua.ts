/**
 * A desk phone's user agent in a few lines of UDP, for what one sipp scenario cannot
 * do: hold two dialogs at once and name one in the other (an attended transfer,
 * RFC 5589 §7: call, hold, call again, REFER with Replaces). Its INVITEs answer the
 * B2BUA's digest challenge (MD5, qop=auth); NOTIFYs and BYEs it receives are answered
 * 200 and kept. Loopback only; every wait is bounded.
 */
import dgram from 'node:dgram'
import { digestResponse } from '../../src/auth/digest'
import type { SipAccount } from './sip-phones'

export interface UaDialog {
  callId: string
  localTag: string
  remoteTag: string
  /** The To of our requests in the dialog (the B2BUA's tag). */
  to: string
  from: string
  cseq: number
}

export interface UaMessage {
  firstLine: string
  headers: Map<string, string[]>
  body: string
  raw: string
}

const WAIT_MS = 10_000

function parse(raw: string): UaMessage {
  const [head = '', body = ''] = raw.split('\r\n\r\n')
  const [firstLine = '', ...lines] = head.split('\r\n')
  const headers = new Map<string, string[]>()
  for (const line of lines) {
    const i = line.indexOf(':')
    if (i < 0) continue
    const name = line.slice(0, i).trim().toLowerCase()
    headers.set(name, [...(headers.get(name) ?? []), line.slice(i + 1).trim()])
  }
  return { firstLine, headers, body, raw }
}

const one = (m: UaMessage, name: string) => m.headers.get(name)?.[0] ?? ''
const statusOf = (m: UaMessage) => Number(/^SIP\/2\.0 (\d{3})/.exec(m.firstLine)?.[1] ?? 0)
const tagIn = (value: string) => /;tag=([^;>\s]+)/.exec(value)?.[1] ?? ''
const random = () => crypto.randomUUID().replaceAll('-', '').slice(0, 12)

export async function startUa(account: SipAccount, server: { port: number; host?: string }) {
  const host = server.host ?? '127.0.0.1'
  const socket = dgram.createSocket('udp4')
  await new Promise<void>((r) => socket.bind(0, '127.0.0.1', () => r()))
  // A test that fails before close() must not keep the process alive.
  socket.unref()
  const port = socket.address().port
  const received: UaMessage[] = []
  const waiters: { match: (m: UaMessage) => boolean; resolve: (m: UaMessage) => void }[] = []
  const send = (text: string) => socket.send(text, server.port, host)

  socket.on('message', (data) => {
    const m = parse(data.toString())
    received.push(m)
    if (!m.firstLine.startsWith('SIP/2.0')) {
      // Requests from the B2BUA (NOTIFY, BYE, a re-INVITE): 200, echoing what a response echoes.
      const method = m.firstLine.split(' ')[0]
      if (method !== 'ACK') {
        const echo = ['via', 'from', 'to', 'call-id', 'cseq'].flatMap((h) =>
          (m.headers.get(h) ?? []).map((v) => `${h === 'call-id' ? 'Call-ID' : h[0]!.toUpperCase() + h.slice(1)}: ${v}`),
        )
        // A re-INVITE (the B2BUA moving or holding our audio) is answered with our SDP.
        const body = method === 'INVITE' ? sdp('sendrecv') : ''
        const extra = method === 'INVITE' ? [`Contact: <sip:${account.username}@127.0.0.1:${port}>`, 'Content-Type: application/sdp'] : []
        send(['SIP/2.0 200 OK', ...echo, ...extra, `Content-Length: ${Buffer.byteLength(body)}`, '', body].join('\r\n'))
      }
    }
    for (const w of [...waiters])
      if (w.match(m)) {
        waiters.splice(waiters.indexOf(w), 1)
        w.resolve(m)
      }
  })

  const next = (what: string, match: (m: UaMessage) => boolean): Promise<UaMessage> => {
    const seen = received.find(match)
    if (seen) return Promise.resolve(seen)
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no ${what} within ${WAIT_MS} ms`)), WAIT_MS)
      waiters.push({
        match,
        resolve: (m) => {
          clearTimeout(timer)
          resolve(m)
        },
      })
    })
  }
  /** The final response to our request (CSeq number and method) in this Call-ID. */
  const finalResponse = (callId: string, cseq: number, method: string) =>
    next(`final response to ${method} ${cseq}`, (m) => statusOf(m) >= 200 && one(m, 'call-id') === callId && one(m, 'cseq') === `${cseq} ${method}`)

  const sdp = (direction: 'sendrecv' | 'sendonly') =>
    [
      'v=0',
      `o=ua 1 ${Date.now() % 1e6} IN IP4 127.0.0.1`,
      's=-',
      'c=IN IP4 127.0.0.1',
      't=0 0',
      `m=audio ${port + 2} RTP/AVP 0`,
      'a=rtpmap:0 PCMU/8000',
      `a=${direction}`,
      '',
    ].join('\r\n')

  const request = (o: {
    method: string
    uri: string
    from: string
    to: string
    callId: string
    cseq: number
    extra?: string[]
    body?: string
    branch?: string
  }) =>
    [
      `${o.method} ${o.uri} SIP/2.0`,
      `Via: SIP/2.0/UDP 127.0.0.1:${port};branch=${o.branch ?? `z9hG4bK${random()}`};rport`,
      `From: ${o.from}`,
      `To: ${o.to}`,
      `Call-ID: ${o.callId}`,
      `CSeq: ${o.cseq} ${o.method}`,
      `Contact: <sip:${account.username}@127.0.0.1:${port}>`,
      'Max-Forwards: 70',
      ...(o.extra ?? []),
      ...(o.body ? ['Content-Type: application/sdp'] : []),
      `Content-Length: ${Buffer.byteLength(o.body ?? '')}`,
      '',
      o.body ?? '',
    ].join('\r\n')

  /** The Authorization value answering a challenge's MD5 offer (qop=auth, nc 1) with this account's name and `password`. */
  const authorizationFor = (
    challenge: UaMessage,
    header: 'www-authenticate' | 'proxy-authenticate',
    method: string,
    uri: string,
    password = account.password,
  ) => {
    const offered = (challenge.headers.get(header) ?? []).find((v) => /algorithm=MD5/i.test(v)) ?? ''
    const param = (name: string) => new RegExp(`${name}="?([^",]+)"?`, 'i').exec(offered)?.[1] ?? ''
    const [realm, nonce] = [param('realm'), param('nonce')]
    const response = digestResponse({
      algorithm: 'MD5',
      username: account.username,
      realm,
      password,
      method,
      uri,
      nonce,
      nc: '00000001',
      cnonce: 'ua1',
      qop: 'auth',
    })
    return `Digest username="${account.username}", realm="${realm}", nonce="${nonce}", uri="${uri}", response="${response}", algorithm=MD5, qop=auth, nc=00000001, cnonce="ua1"`
  }

  const ack = (d: UaDialog, cseq: number, uri: string, branch?: string) =>
    send(request({ method: 'ACK', uri, from: d.from, to: d.to, callId: d.callId, cseq, branch }))

  return {
    port,
    received,
    /** Calls `extension`: the B2BUA's digest challenge answered, the 200 acknowledged. */
    async call(extension: string): Promise<UaDialog> {
      const uri = `sip:${extension}@${account.domain}`
      const callId = `${random()}@127.0.0.1`
      const localTag = random()
      const from = `<sip:${account.username}@${account.domain}>;tag=${localTag}`
      const plainTo = `<${uri}>`
      const first = `z9hG4bK${random()}`
      send(request({ method: 'INVITE', uri, from, to: plainTo, callId, cseq: 1, body: sdp('sendrecv'), branch: first }))
      const challenge = await finalResponse(callId, 1, 'INVITE')
      if (statusOf(challenge) !== 407) throw new Error(`INVITE answered ${challenge.firstLine}`)
      send(request({ method: 'ACK', uri, from, to: one(challenge, 'to'), callId, cseq: 1, branch: first }))
      const auth = authorizationFor(challenge, 'proxy-authenticate', 'INVITE', uri)
      send(request({ method: 'INVITE', uri, from, to: plainTo, callId, cseq: 2, body: sdp('sendrecv'), extra: [`Proxy-Authorization: ${auth}`] }))
      const answer = await finalResponse(callId, 2, 'INVITE')
      if (statusOf(answer) !== 200) throw new Error(`INVITE answered ${answer.firstLine}`)
      const d: UaDialog = { callId, localTag, remoteTag: tagIn(one(answer, 'to')), to: one(answer, 'to'), from, cseq: 2 }
      ack(d, 2, uri)
      return d
    },
    /**
     * REGISTERs this UA's contact, answering the 401 with `password` (the account's by default): the final
     * status, or 0 when nothing answers within `waitMs` (the registrar dropped us).
     */
    async register(password = account.password, waitMs = WAIT_MS): Promise<number> {
      const uri = `sip:${account.domain}`
      const callId = `${random()}@127.0.0.1`
      const from = `<sip:${account.username}@${account.domain}>;tag=${random()}`
      const to = `<sip:${account.username}@${account.domain}>`
      const extra = ['Expires: 600']
      const final = (cseq: number) => Promise.race([finalResponse(callId, cseq, 'REGISTER'), Bun.sleep(waitMs).then(() => undefined)]).catch(() => undefined)
      send(request({ method: 'REGISTER', uri, from, to, callId, cseq: 1, extra }))
      const challenge = await final(1)
      if (!challenge || statusOf(challenge) !== 401) return challenge ? statusOf(challenge) : 0
      const auth = authorizationFor(challenge, 'www-authenticate', 'REGISTER', uri, password)
      send(request({ method: 'REGISTER', uri, from, to, callId, cseq: 2, extra: [...extra, `Authorization: ${auth}`] }))
      const answer = await final(2)
      return answer ? statusOf(answer) : 0
    },
    /** A re-INVITE holding the other party (a=sendonly) or taking it off hold (sendrecv), answered and acknowledged; the 200. */
    async hold(d: UaDialog, extension: string, direction: 'sendonly' | 'sendrecv' = 'sendonly'): Promise<UaMessage> {
      const uri = `sip:${extension}@${account.domain}`
      const cseq = ++d.cseq
      send(request({ method: 'INVITE', uri, from: d.from, to: d.to, callId: d.callId, cseq, body: sdp(direction) }))
      const answer = await finalResponse(d.callId, cseq, 'INVITE')
      if (statusOf(answer) !== 200) throw new Error(`re-INVITE answered ${answer.firstLine}`)
      ack(d, cseq, uri)
      return answer
    },
    /** REFER in `d` to `target` (an extension), replacing `replaced` (RFC 3891 tags from the target's side: to-tag theirs, from-tag ours). */
    async referReplacing(d: UaDialog, extension: string, target: string, replaced: UaDialog): Promise<number> {
      const uri = `sip:${extension}@${account.domain}`
      const cseq = ++d.cseq
      const replaces = encodeURIComponent(`${replaced.callId};to-tag=${replaced.remoteTag};from-tag=${replaced.localTag}`)
      send(
        request({
          method: 'REFER',
          uri,
          from: d.from,
          to: d.to,
          callId: d.callId,
          cseq,
          extra: [`Refer-To: <sip:${target}@${account.domain}?Replaces=${replaces}>`, `Referred-By: <sip:${account.username}@${account.domain}>`],
        }),
      )
      return statusOf(await finalResponse(d.callId, cseq, 'REFER'))
    },
    /** Hangs up: BYE in the dialog, answered 200. */
    async hangUp(d: UaDialog, extension: string) {
      const cseq = ++d.cseq
      send(request({ method: 'BYE', uri: `sip:${extension}@${account.domain}`, from: d.from, to: d.to, callId: d.callId, cseq }))
      const answer = await finalResponse(d.callId, cseq, 'BYE')
      if (statusOf(answer) !== 200) throw new Error(`BYE answered ${answer.firstLine}`)
    },
    /** The next request of this method in the dialog (already received, or within 10 s). */
    request: (d: UaDialog, method: string, where: (m: UaMessage) => boolean = () => true) =>
      next(`${method} in ${d.callId}`, (m) => m.firstLine.startsWith(`${method} `) && one(m, 'call-id') === d.callId && where(m)),
    close: () => socket.close(),
  }
}
