/** A fake phone for relay tests: a plain UDP socket on 127.0.0.1 that sends and collects RTP. */
import { buildRtp, parseRtp, type RtpPacket, type RtpPacketInit } from './packet'

export interface TestPhone {
  port: number
  received: RtpPacket[]
  send(packet: RtpPacketInit, toPort: number): void
  sendRaw(bytes: Uint8Array, toPort: number): void
  close(): void
}

export async function testPhone(): Promise<TestPhone> {
  const received: RtpPacket[] = []
  const socket = await Bun.udpSocket({
    hostname: '127.0.0.1',
    port: 0,
    binaryType: 'uint8array',
    socket: {
      data(_s, data) {
        const p = parseRtp(data)
        if (p) received.push(p)
      },
      // ICMP port-unreachable after a leg closed: not a test failure.
      error() {},
    },
  })
  return {
    port: socket.port,
    received,
    send: (packet, toPort) => void socket.send(buildRtp(packet), toPort, '127.0.0.1'),
    sendRaw: (bytes, toPort) => void socket.send(bytes, toPort, '127.0.0.1'),
    close: () => socket.close(),
  }
}

/** Wait for a condition that loopback UDP makes true almost at once; bounded, and says what it waited for. */
export async function until(condition: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 1000; i++) {
    if (condition()) return
    await Bun.sleep(1)
  }
  throw new Error(`never happened: ${what}`)
}

/** 8 kHz samples of a sine. */
export function sine(hz: number, samples: number, amplitude = 8000, phase = 0): Int16Array {
  return Int16Array.from({ length: samples }, (_, i) => Math.round(amplitude * Math.sin((2 * Math.PI * hz * (i + phase)) / 8000)))
}

/** Root mean square of samples [from, to). */
export function rms(samples: Int16Array, from = 0, to = samples.length): number {
  let sum = 0
  for (let i = from; i < to; i++) sum += samples[i]! * samples[i]!
  return Math.sqrt(sum / Math.max(1, to - from))
}
