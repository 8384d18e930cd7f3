import { describe, expect, test } from 'bun:test'
import { createPortPool, type PortPair, PortsExhausted } from './port-pool'

/** A free even port with its neighbour, found by letting the OS pick and rounding; retried a bounded number of times. */
async function freeRange(pairs: number): Promise<number> {
  for (let attempt = 0; attempt < 50; attempt++) {
    const probe = await Bun.udpSocket({ hostname: '127.0.0.1', port: 0 })
    const base = probe.port & ~1
    probe.close()
    if (base + 2 * pairs - 1 > 65535 || base < 1024) continue
    const held: { close(): void }[] = []
    let ok = true
    for (let p = base; p < base + 2 * pairs && ok; p++) {
      try {
        held.push(await Bun.udpSocket({ hostname: '127.0.0.1', port: p }))
      } catch {
        ok = false
      }
    }
    for (const s of held) s.close()
    if (ok) return base
  }
  throw new Error('no free port range found')
}

describe('RTP port pool', () => {
  test('hands out even/odd pairs from the range until it is exhausted, then refuses with a typed error', async () => {
    const min = await freeRange(2)
    const pool = createPortPool({ host: '127.0.0.1', min, max: min + 3 })
    const pairs: PortPair[] = []
    try {
      pairs.push(await pool.allocate(), await pool.allocate())
      expect(pairs.map((p) => [p.rtpPort, p.rtcpPort]).sort()).toEqual([
        [min, min + 1],
        [min + 2, min + 3],
      ])
      expect(pool.inUse).toBe(2)
      expect(pool.capacity).toBe(2)
      const refused = await pool.allocate().catch((e: unknown) => e)
      expect(refused).toBeInstanceOf(PortsExhausted)
      expect((refused as PortsExhausted).code).toBe('ports_exhausted')
    } finally {
      for (const p of pairs) p.release()
    }
    expect(pool.inUse).toBe(0)
  })

  test('a released pair can be allocated again (its sockets really closed)', async () => {
    const min = await freeRange(1)
    const pool = createPortPool({ host: '127.0.0.1', min, max: min + 1 })
    const a = await pool.allocate()
    a.release()
    a.release()
    expect(a.rtp.closed).toBe(true)
    const b = await pool.allocate()
    expect(b.rtpPort).toBe(min)
    b.release()
  })

  test('ports some other program holds are skipped: RTP taken, or only RTCP taken', async () => {
    const min = await freeRange(3)
    const squatters = [await Bun.udpSocket({ hostname: '127.0.0.1', port: min }), await Bun.udpSocket({ hostname: '127.0.0.1', port: min + 3 })]
    const pool = createPortPool({ host: '127.0.0.1', min, max: min + 5 })
    try {
      const p = await pool.allocate()
      expect(p.rtpPort).toBe(min + 4)
      expect(await pool.allocate().catch((e: unknown) => e)).toBeInstanceOf(PortsExhausted)
      p.release()
    } finally {
      for (const s of squatters) s.close()
    }
  })

  test('concurrent allocations never share a pair', async () => {
    const min = await freeRange(4)
    const pool = createPortPool({ host: '127.0.0.1', min, max: min + 7 })
    const pairs = await Promise.all([pool.allocate(), pool.allocate(), pool.allocate(), pool.allocate()])
    expect(new Set(pairs.map((p) => p.rtpPort)).size).toBe(4)
    for (const p of pairs) p.release()
  })

  test('a range without a whole pair is refused up front', () => {
    expect(() => createPortPool({ host: '127.0.0.1', min: 40001, max: 40002 })).toThrow(RangeError)
  })
})
