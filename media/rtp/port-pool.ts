/**
 * RTP/RTCP port pairs (RTP on the even port, RTCP on the next: RFC 3550 §11) from
 * RTP_PORT_MIN..RTP_PORT_MAX. A pair is taken by binding both sockets, so a port some
 * other program holds is skipped rather than assumed free. Allocation walks the range
 * round-robin: a just-released pair is the last to be reused, so stray packets of an
 * ended call do not land in the next one.
 */

export type UdpSocket = Bun.udp.Socket<'uint8array'>

export interface PortPair {
  readonly host: string
  readonly rtpPort: number
  readonly rtcpPort: number
  readonly rtp: UdpSocket
  readonly rtcp: UdpSocket
  /**
   * What receives the datagrams: the owner sets these. (Bun 1.4's `reload` does not
   * replace a UDP socket's handler, so the pool's handler forwards here instead.)
   */
  onRtp: Receiver | undefined
  onRtcp: Receiver | undefined
  /** Close both sockets and return the pair to the pool; idempotent. */
  release(): void
}

export type Receiver = (data: Uint8Array, port: number, address: string) => void

export interface PortPoolOptions {
  host: string
  min: number
  max: number
}

export interface PortPool {
  /** Throws PortsExhausted when no pair in the range can be bound. */
  allocate(): Promise<PortPair>
  /** Pairs handed out and not yet released. */
  readonly inUse: number
  /** Pairs the range holds. */
  readonly capacity: number
}

export class PortsExhausted extends Error {
  readonly code = 'ports_exhausted'
  constructor(min: number, max: number) {
    super(`no free RTP port pair in ${min}..${max}`)
  }
}

/** The errors that mean "this port, not the host or the range, is the problem". */
const PORT_TAKEN = new Set(['EADDRINUSE', 'EACCES'])

export function createPortPool(options: PortPoolOptions): PortPool {
  const { host, max } = options
  const first = options.min + (options.min & 1)
  if (!Number.isInteger(first) || !Number.isInteger(max) || first < 1 || max > 65535 || first + 1 > max) {
    throw new RangeError(`RTP port range ${options.min}..${max} holds no even/odd pair`)
  }
  const capacity = Math.floor((max - first + 1) / 2)
  // Ports of pairs handed out, or being bound right now (allocate awaits between the two).
  const taken = new Set<number>()
  let cursor = 0

  const bind = async (port: number, deliver: Receiver): Promise<UdpSocket | undefined> => {
    try {
      return await Bun.udpSocket({
        hostname: host,
        port,
        binaryType: 'uint8array',
        socket: {
          data: (_socket, data, fromPort, address) => deliver(data, fromPort, address),
          // ICMP port-unreachable from a peer that went away is routine for RTP.
          error() {},
        },
      })
    } catch (err) {
      if (PORT_TAKEN.has((err as { code?: string }).code ?? '')) return undefined
      throw err
    }
  }

  return {
    get inUse() {
      return taken.size
    },
    capacity,
    async allocate() {
      for (let tried = 0; tried < capacity; tried++) {
        const rtpPort = first + 2 * cursor
        cursor = (cursor + 1) % capacity
        if (taken.has(rtpPort)) continue
        taken.add(rtpPort)
        let rtp: UdpSocket | undefined
        // The pair object does not exist while binding; the handlers look it up when packets come.
        let pair: PortPair | undefined
        try {
          rtp = await bind(rtpPort, (data, port, address) => pair?.onRtp?.(data, port, address))
          const rtcp = rtp && (await bind(rtpPort + 1, (data, port, address) => pair?.onRtcp?.(data, port, address)))
          if (rtp && rtcp) {
            let released = false
            pair = {
              host,
              rtpPort,
              rtcpPort: rtpPort + 1,
              rtp,
              rtcp,
              onRtp: undefined,
              onRtcp: undefined,
              release() {
                if (released) return
                released = true
                rtp!.close()
                rtcp.close()
                taken.delete(rtpPort)
              },
            }
            return pair
          }
        } catch (err) {
          rtp?.close()
          taken.delete(rtpPort)
          throw err
        }
        rtp?.close()
        taken.delete(rtpPort)
      }
      throw new PortsExhausted(options.min, max)
    },
  }
}
