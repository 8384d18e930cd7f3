/**
 * CPU time of a process's descendants, from /proc: for the service on the embedded
 * default this is its own PostgreSQL server (postmaster, backends, writers), whose
 * work a figure of the service process alone leaves out.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { cpuSecondsWithReaped } from './cpu'

function childrenOf(pid: number): number[] {
  try {
    return readdirSync(`/proc/${pid}/task`).flatMap((tid) => readFileSync(`/proc/${pid}/task/${tid}/children`, 'utf8').split(' ').filter(Boolean).map(Number))
  } catch {
    return []
  }
}

/**
 * CPU seconds of every live descendant of pid (not pid itself), each with the children
 * it reaped, so a backend that exited still counts through its parent; undefined where
 * there is no /proc.
 */
export function descendantsCpuSeconds(pid: number): number | undefined {
  if (!existsSync(`/proc/${pid}/stat`)) return undefined
  let total = 0
  const queue = childrenOf(pid)
  for (let next = queue.shift(); next !== undefined; next = queue.shift()) {
    total += cpuSecondsWithReaped(next) ?? 0
    queue.push(...childrenOf(next))
  }
  return total
}
