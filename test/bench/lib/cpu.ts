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
