/**
 * SIP's UDP and TCP listeners on one host and port: datagrams and framed stream
 * messages go up as bytes with their source; answers go back to a UDP address or
 * down the TCP connection a message came on.
 */
import type { Socket, TCPSocketListener } from 'bun'
import type { SipSource } from './handler'
import { SipStreamFramer } from './framing'
import { raiseReceiveBuffer, receiveBufferSize } from './udp-receive-buffer'

/** One received message and the way back to its sender. */
/** Several seconds of requests at thousands a second (the kernel caps it at net.core.rmem_max without CAP_NET_ADMIN). */
export const SIP_UDP_RECEIVE_BUFFER = 8 * 1024 * 1024

export interface InboundMessage {
  bytes: Uint8Array
  source: SipSource
  /** Sends bytes back the way the message came (the same TCP connection, or a UDP datagram to `to`). */
  reply(bytes: Uint8Array, to?: SipSource): void
}

export interface TransportEvents {
  message(inbound: InboundMessage): void
  /** A TCP stream that could not be framed, closed after `answer` had its chance to reply to its head. */
  broken?(reason: string, source: SipSource, head: InboundMessage | undefined): void
  /** A socket-level error (ICMP unreachable on UDP, a reset TCP peer). */
  socketError?(error: Error): void
}

export interface SipTransportOptions {
  host: string
  /** 0: an ephemeral port, the same number for UDP and TCP when it can be had. */
  port: number
  /** Open TCP connections at most; more are refused, so a connection flood cannot grow memory without limit. */
  maxConnections?: number
  /** Bytes a TCP connection may have queued for sending before it is dropped as not reading. */
  maxQueuedBytes?: number
  /**
   * Seconds a TCP connection may stay silent (not a byte, not a CRLF keepalive)
   * before it is closed. Default 3,660: longer than any registration lasts (the
   * registrar's ceiling is 3,600 s), so only a connection no phone still uses goes.
   */
  tcpIdleTimeoutS?: number
  /**
   * Seconds a new TCP connection has to deliver its first whole message. Default 30.
   * Any byte resets the idle timeout, so without this a peer trickling a header a
   * byte at a time would hold one of the `maxConnections` indefinitely.
   */
  tcpFirstMessageTimeoutS?: number
}

export interface SipTransports {
  readonly udpPort: number
  readonly tcpPort: number
  /** Sends a datagram (an out-of-dialog request, or a response to a UDP source). */
  sendUdp(bytes: Uint8Array, address: string, port: number): void
  /**
   * Sends down the open TCP connection a peer made from `address`:`port` (a phone
   * keeps the one it registered over, RFC 5626); false when there is none.
   */
  sendTcp(bytes: Uint8Array, address: string, port: number): boolean
  readonly openConnections: number
  /** The UDP socket's receive buffer as the kernel reports it; undefined where it cannot be read. */
  readonly udpReceiveBuffer: number | undefined
  close(): Promise<void>
}

interface Connection {
  framer: SipStreamFramer
  source: SipSource
  /** Bytes the kernel did not take yet; flushed on drain. */
  queued: Buffer[]
  queuedBytes: number
  /** Until the first whole message: closes a connection that has not sent one in time. */
  firstMessageTimer?: ReturnType<typeof setTimeout>
  /**
   * Closes the connection once silent for tcpIdleTimeoutS, restarted by every byte in
   * or out. Not Bun's `socket.timeout`: its 4-second sweep fires up to 4 s early, so a
   * short timeout could close a connection that had just spoken.
   */
  idleTimer?: ReturnType<typeof setTimeout>
}

export async function openSipTransports(options: SipTransportOptions, events: TransportEvents): Promise<SipTransports> {
  const maxConnections = options.maxConnections ?? 1024
  const maxQueuedBytes = options.maxQueuedBytes ?? 1 << 20
  const idleTimeoutMs = (options.tcpIdleTimeoutS ?? 3660) * 1000
  const firstMessageTimeoutMs = (options.tcpFirstMessageTimeoutS ?? 30) * 1000
  /** Open connections by their peer's address and port. */
  const connections = new Map<string, Socket<Connection>>()
  const keyOf = (source: SipSource) => `${source.address}|${source.port}`

  const write = (socket: Socket<Connection>, bytes: Uint8Array) => {
    const c = socket.data
    c.idleTimer?.refresh()
    if (c.queuedBytes > 0) return enqueue(socket, Buffer.from(bytes))
    const written = socket.write(bytes)
    // Negative: the connection is gone, and so is the way back (RFC 3261 §18.2.2 would open a new one; phones keep theirs open).
    if (written < 0) return
    if (written < bytes.length) enqueue(socket, Buffer.from(bytes.subarray(Math.max(0, written))))
  }
  const enqueue = (socket: Socket<Connection>, rest: Buffer) => {
    const c = socket.data
    c.queued.push(rest)
    c.queuedBytes += rest.length
    if (c.queuedBytes > maxQueuedBytes) socket.terminate()
  }

  const forget = (socket: Socket<Connection>) => {
    if (!socket.data) return
    clearTimeout(socket.data.firstMessageTimer)
    clearTimeout(socket.data.idleTimer)
    connections.delete(keyOf(socket.data.source))
  }

  const udp = await Bun.udpSocket({
    hostname: options.host,
    port: options.port,
    socket: {
      data(socket, data, port, address) {
        const source: SipSource = { transport: 'udp', address, port }
        events.message({
          bytes: data,
          source,
          reply: (bytes, to = source) => void socket.send(bytes, to.port, to.address),
        })
      },
      // A peer that went away answers our retransmissions with ICMP port-unreachable: routine, not fatal.
      error(_socket, error) {
        events.socketError?.(error)
      },
    },
  })

  // Room for a burst of requests while the event loop is busy (udp-receive-buffer.ts); the default where it cannot be had.
  const udpReceiveBuffer = raiseReceiveBuffer(udp as { fd?: number }, SIP_UDP_RECEIVE_BUFFER) ?? receiveBufferSize(udp as { fd?: number })

  const listen = (port: number): TCPSocketListener<Connection> =>
    Bun.listen<Connection>({
      hostname: options.host,
      port,
      socket: {
        open(socket) {
          const source: SipSource = { transport: 'tcp', address: socket.remoteAddress, port: socket.remotePort ?? 0 }
          socket.data = { framer: new SipStreamFramer(), source, queued: [], queuedBytes: 0 }
          if (connections.size >= maxConnections) {
            socket.terminate()
            return
          }
          connections.set(keyOf(source), socket)
          socket.data.idleTimer = setTimeout(() => socket.end(), idleTimeoutMs)
          socket.data.firstMessageTimer = setTimeout(() => socket.end(), firstMessageTimeoutMs)
        },
        data(socket, chunk) {
          const c = socket.data
          c.idleTimer?.refresh()
          const inbound = (bytes: Uint8Array): InboundMessage => ({ bytes, source: c.source, reply: (out) => write(socket, out) })
          for (const event of c.framer.push(chunk)) {
            if (event.kind === 'ping') write(socket, Buffer.from('\r\n'))
            else if (event.kind === 'message') {
              if (c.firstMessageTimer !== undefined) clearTimeout(c.firstMessageTimer)
              c.firstMessageTimer = undefined
              events.message(inbound(event.bytes))
            } else {
              events.broken?.(event.reason, c.source, event.bytes ? inbound(event.bytes) : undefined)
              socket.end()
              return
            }
          }
        },
        drain(socket) {
          const c = socket.data
          while (c.queued.length > 0) {
            const next = c.queued[0]!
            const written = socket.write(next)
            if (written < next.length) {
              c.queued[0] = next.subarray(Math.max(0, written))
              c.queuedBytes -= Math.max(0, written)
              return
            }
            c.queued.shift()
            c.queuedBytes -= next.length
          }
        },
        close(socket) {
          forget(socket)
        },
        error(socket, error) {
          forget(socket)
          events.socketError?.(error)
        },
      },
    })

  let tcp: TCPSocketListener<Connection>
  try {
    // SIP endpoints expect UDP and TCP on one port number: try the UDP one first.
    tcp = listen(udp.port)
  } catch (e) {
    if (options.port !== 0) {
      udp.close()
      throw e
    }
    tcp = listen(0)
  }

  return {
    udpPort: udp.port,
    tcpPort: tcp.port,
    udpReceiveBuffer,
    get openConnections() {
      return connections.size
    },
    sendUdp: (bytes, address, port) => void udp.send(bytes, port, address),
    sendTcp: (bytes, address, port) => {
      const socket = connections.get(keyOf({ transport: 'tcp', address, port }))
      if (!socket) return false
      write(socket, bytes)
      return true
    },
    close: async () => {
      udp.close()
      tcp.stop(true)
      for (const socket of connections.values()) socket.terminate()
      connections.clear()
    },
  }
}
