/** CPU time a process has used (user + system), from /proc; undefined where there is no /proc. */
import { readFileSync } from 'node:fs'

const TICKS_PER_SECOND = 100

export function cpuSeconds(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    // Fields after the command name (which may hold spaces) start after the last ')'.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    const utime = Number(fields[11])
    const stime = Number(fields[12])
    return Number.isFinite(utime) && Number.isFinite(stime) ? (utime + stime) / TICKS_PER_SECOND : undefined
  } catch {
    return undefined
  }
}

/** Samples CPU seconds by process, for processes that may come and go between samples (a server's backends). */
export interface CpuMeter {
  sample(): Promise<Map<number, number>>
  close(): Promise<void>
}

/**
 * CPU used between two samples: a process that started in between counts whole; one
 * that ended in between is lost (pooled connections and servers do not end mid-run).
 * Undefined when the later sample saw no process.
 */
export function cpuUsedBetween(earlier: Map<number, number>, later: Map<number, number>): number | undefined {
  if (later.size === 0) return undefined
  let total = 0
  for (const [pid, seconds] of later) total += seconds - (earlier.get(pid) ?? 0)
  return total
}
