/**
 * Datagrams the kernel dropped because a UDP socket's receive buffer was full, per
 * local port (Linux: the `drops` column of /proc/net/udp and udp6). A relay bench
 * needs it to say where a lost packet was lost: at the service's sockets, or at the
 * load generator's (a starved sipp echoing hundreds of calls on one socket); and a
 * bigger buffer for a load generator that cannot ask for one.
 */
import { readFileSync, writeFileSync } from 'node:fs'

/** Drops by local port of the sockets open now; undefined where /proc/net/udp cannot be read. */
export function udpDropsByPort(): Map<number, number> | undefined {
  const byPort = new Map<number, number>()
  let readAny = false
  for (const file of ['/proc/net/udp', '/proc/net/udp6']) {
    let text: string
    try {
      text = readFileSync(file, 'utf8')
    } catch {
      continue
    }
    readAny = true
    for (const line of text.split('\n').slice(1)) {
      const fields = line.trim().split(/\s+/)
      const local = fields[1]
      const drops = Number(fields.at(-1))
      if (!local || !Number.isFinite(drops)) continue
      const port = Number.parseInt(local.slice(local.lastIndexOf(':') + 1), 16)
      byPort.set(port, (byPort.get(port) ?? 0) + drops)
    }
  }
  return readAny ? byPort : undefined
}

/**
 * Watches the drops while a run goes on: a socket's counter dies with it, so each
 * port's highest reading since the start is kept. `stop` returns them by port.
 */
export function watchUdpDrops(everyMs = 250): { stop(): Map<number, number> | undefined } {
  const highest = new Map<number, number>()
  const start = udpDropsByPort()
  if (start === undefined) return { stop: () => undefined }
  const sample = () => {
    for (const [port, drops] of udpDropsByPort() ?? []) {
      // A socket open before the run keeps its earlier drops out.
      const since = drops - (start.get(port) ?? 0)
      if (since > (highest.get(port) ?? 0)) highest.set(port, since)
    }
  }
  const timer = setInterval(sample, everyMs)
  return {
    stop() {
      clearInterval(timer)
      sample()
      return highest
    },
  }
}

const RMEM_DEFAULT = '/proc/sys/net/core/rmem_default'

/**
 * Runs `bind` with the kernel's default UDP receive buffer raised to `bytes`, then
 * puts the old default back: for a load generator that cannot size its own sockets
 * (sipp's -buff_size does not reach its media socket). Sockets take the default when
 * they are made, so only what `bind` opens gets it. Returns false, having run `bind`
 * anyway, where the setting cannot be written (not root, not Linux).
 */
export async function withReceiveBufferDefault(bytes: number, bind: () => Promise<void>): Promise<boolean> {
  let before: string | undefined
  try {
    before = readFileSync(RMEM_DEFAULT, 'utf8').trim()
    if (Number(before) < bytes) writeFileSync(RMEM_DEFAULT, String(bytes))
  } catch {
    before = undefined
  }
  try {
    await bind()
  } finally {
    if (before !== undefined) writeFileSync(RMEM_DEFAULT, before)
  }
  return before !== undefined
}
