/** CPU time a process has used (user + system), from /proc; undefined where there is no /proc. */
import { readFileSync } from 'node:fs'

const TICKS_PER_SECOND = 100

/** The fields of /proc/<pid>/stat after the command name (which may hold spaces, so they start after the last ')'). */
function statFields(pid: number): string[] | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')
  } catch {
    return undefined
  }
}

/** Seconds of the clock ticks in the given stat fields (after the command name), summed; undefined if any is missing. */
function tickSeconds(pid: number, fields: number[]): number | undefined {
  const stat = statFields(pid)
  if (!stat) return undefined
  const ticks = fields.map((i) => Number(stat[i]))
  return ticks.every(Number.isFinite) ? ticks.reduce((a, b) => a + b, 0) / TICKS_PER_SECOND : undefined
}

export function cpuSeconds(pid: number): number | undefined {
  return tickSeconds(pid, [11, 12])
}

/** utime + stime of the process, plus that of its children it has already reaped (cutime, cstime). */
export function cpuSecondsWithReaped(pid: number): number | undefined {
  return tickSeconds(pid, [11, 12, 13, 14])
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
