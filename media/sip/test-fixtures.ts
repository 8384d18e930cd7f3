/**
 * What the SIP tests share: the phone captures in fixtures/, and tiny UDP and TCP
 * peers on 127.0.0.1 that send raw bytes and collect what comes back.
 */
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import type { Socket } from 'bun'

const FIXTURES = join(import.meta.dir, 'fixtures')

/** A capture as sent on the wire: CRLF line ends, Content-Length filled in. */
export function loadCapture(name: string): string {
  const text = readFileSync(join(FIXTURES, name), 'utf8').replace(/\r?\n/g, '\r\n')
  const split = text.indexOf('\r\n\r\n')
  const body = text.slice(split + 4)
  return text.slice(0, split + 4).replace('@LENGTH@', String(Buffer.byteLength(body))) + body
}

export const captureNames = () => readdirSync(FIXTURES).filter((f) => f.endsWith('.sip'))

let counter = 0
/** A fresh branch, tag and Call-ID for each test request. */
export function unique(): string {
  counter++
  return `${process.pid.toString(36)}${Date.now().toString(36)}${counter}`
}

/** An OPTIONS (or other method) request from a peer at 127.0.0.1:`port`. */
export function request(
  method: string,
  opts: { port: number; transport?: 'UDP' | 'TCP'; id?: string; body?: string; extra?: string[]; cseq?: number },
): string {
  const id = opts.id ?? unique()
  const body = opts.body ?? ''
  return [
    `${method} sip:service@127.0.0.1 SIP/2.0`,
    `Via: SIP/2.0/${opts.transport ?? 'UDP'} 127.0.0.1:${opts.port};branch=z9hG4bK${id};rport`,
    `From: <sip:tester@127.0.0.1>;tag=f${id}`,
    `To: <sip:service@127.0.0.1>`,
    `Call-ID: ${id}@127.0.0.1`,
    `CSeq: ${opts.cseq ?? 1} ${method}`,
    'Max-Forwards: 70',
    ...(opts.extra ?? []),
    `Content-Length: ${Buffer.byteLength(body)}`,
    '',
    body,
  ].join('\r\n')
}

/** Waits until `check` holds, polling the event loop; bounded, so a failing test ends. */
export async function until(check: () => boolean, what: string, rounds = 400): Promise<void> {
  for (let i = 0; i < rounds; i++) {
    if (check()) return
    await new Promise((r) => setTimeout(r, 5))
  }
  throw new Error(`timed out waiting for ${what}`)
}

export interface UdpPeer {
  port: number
  received: string[]
  send(text: string | Uint8Array, port: number): void
  close(): void
}

export async function udpPeer(): Promise<UdpPeer> {
  const received: string[] = []
  const socket = await Bun.udpSocket({
    hostname: '127.0.0.1',
    port: 0,
    socket: {
      data(_s, data) {
        received.push(Buffer.from(data).toString('utf8'))
      },
      // ICMP port-unreachable for a datagram to a server already stopped: not this test's concern.
      error() {},
    },
  })
  return {
    port: socket.port,
    received,
    send: (text, port) => void socket.send(typeof text === 'string' ? Buffer.from(text) : text, port, '127.0.0.1'),
    close: () => socket.close(),
  }
}

export interface TcpPeer {
  port: number
  /** Everything received, concatenated. */
  text(): string
  closed(): boolean
  write(text: string | Uint8Array): void
  close(): void
}

export async function tcpPeer(serverPort: number): Promise<TcpPeer> {
  let data = ''
  let isClosed = false
  const socket: Socket<undefined> = await Bun.connect({
    hostname: '127.0.0.1',
    port: serverPort,
    socket: {
      data(_s, chunk) {
        data += Buffer.from(chunk).toString('utf8')
      },
      close() {
        isClosed = true
      },
      error() {
        isClosed = true
      },
    },
  })
  return {
    port: socket.localPort,
    text: () => data,
    closed: () => isClosed,
    write: (text) => void socket.write(text),
    close: () => socket.end(),
  }
}

/** The responses in a TCP stream's text (split on status lines), for counting. */
export const statusLines = (text: string) => text.match(/^SIP\/2\.0 \d{3}[^\r]*/gm) ?? []
