/**
 * The embedded data folder (DATA_DIR) belongs to the one process that opened it. A
 * second one (a second `npm start` on the same folder) fails at once with DataDirInUse,
 * naming the folder and the holder's pid, instead of running beside it: with PGlite it
 * would write to a copy of the data that the next save of either process loses.
 *
 * The lock is the file DATA_DIR/service.lock, made atomically (a hard link of a file
 * already written, so nobody reads it half-written; O_EXCL where links are not
 * supported) and holding the holder's pid and process start time. It dies with its
 * process: a lock whose pid is gone, or now belongs to another process (its start time
 * differs, as after a restart of the machine or the container), is stale and taken
 * over, under a short-lived second lock so that two processes never both take it over.
 * Nothing is kept open: a process killed with SIGKILL leaves only a stale file.
 *
 * Not used with DATABASE_URL (several processes share one server by design) nor for
 * `memory://` (nothing on disk).
 */
import { closeSync, linkSync, mkdirSync, openSync, readFileSync, rmSync, writeFileSync, writeSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { DataDirInUse } from './embedded-postgres'

export { DataDirInUse }

export const LOCK_FILE = 'service.lock'
const TAKEOVER_FILE = 'service.lock.takeover'
/** How long (ms) a lock file that cannot be read yet (made by O_EXCL, not yet written) is waited for. */
const UNREADABLE_WAIT_MS = 1000

export interface DataDirLock {
  /** The folder, absolute. */
  readonly dataDir: string
  /** Gives the folder up (once every holder in this process has). */
  release(): void
}

interface Holder {
  pid: number
  /** The process's start time (Linux: clock ticks after boot, /proc/<pid>/stat field 22). */
  start?: string
}

/** When the process started, where the system tells (Linux); undefined elsewhere or when it is gone. */
function processStart(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    // The command name (field 2) may hold spaces and parentheses: count from the last ')'.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    return fields[19] // field 22 overall
  } catch {
    return undefined
  }
}

function alive(h: Holder): boolean {
  try {
    process.kill(h.pid, 0)
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'EPERM') return false
  }
  // The pid is in use: by the holder, unless it started at another time (the pid was reused).
  if (h.start) {
    const now = processStart(h.pid)
    if (now !== undefined && now !== h.start) return false
  }
  return true
}

function readHolder(file: string): Holder | undefined | 'missing' {
  let text: string
  try {
    text = readFileSync(file, 'utf8')
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return 'missing'
    throw e
  }
  const [pidLine, startLine] = text.split('\n')
  const pid = Number(pidLine)
  if (!Number.isInteger(pid) || pid <= 0) return undefined
  return { pid, start: startLine?.trim() || undefined }
}

const sameHolder = (a: Holder | undefined, b: Holder | undefined | 'missing') => b !== 'missing' && a?.pid === b?.pid && a?.start === b?.start

/** Makes `file` with `content`, atomically; false when it exists already. */
function createWith(file: string, content: string): boolean {
  const tmp = `${file}.${process.pid}.${Math.random().toString(36).slice(2)}`
  writeFileSync(tmp, content, { mode: 0o644 })
  try {
    linkSync(tmp, file)
    return true
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code
    if (code === 'EEXIST') return false
    // No hard links here (some network or FUSE file systems): O_EXCL, then the content.
    if (code !== 'EPERM' && code !== 'ENOTSUP' && code !== 'EOPNOTSUPP' && code !== 'ENOSYS') throw e
    let fd: number
    try {
      fd = openSync(file, 'wx', 0o644)
    } catch (e2) {
      if ((e2 as NodeJS.ErrnoException).code === 'EEXIST') return false
      throw e2
    }
    try {
      writeSync(fd, content)
    } finally {
      closeSync(fd)
    }
    return true
  } finally {
    rmSync(tmp, { force: true })
  }
}

/** Locks held by this process, by folder: a second start in the same process (tests) shares the lock. */
const held = new Map<string, { count: number; content: string }>()
let exitHook = false

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

/**
 * Takes DATA_DIR for this process, or throws DataDirInUse naming the live holder.
 * Undefined for `memory://` (nothing to lock).
 */
export async function lockDataDir(dataDirIn: string): Promise<DataDirLock | undefined> {
  if (dataDirIn === 'memory://') return undefined
  const dataDir = resolve(dataDirIn)
  const file = join(dataDir, LOCK_FILE)
  const lock: DataDirLock = {
    dataDir,
    release() {
      const mine = held.get(dataDir)
      if (!mine) return
      if (--mine.count > 0) return
      held.delete(dataDir)
      removeIfMine(file, mine.content)
    },
  }
  const already = held.get(dataDir)
  if (already) {
    already.count++
    return lock
  }
  mkdirSync(dataDir, { recursive: true })
  const me: Holder = { pid: process.pid, start: processStart(process.pid) }
  const content = `${me.pid}\n${me.start ?? ''}\n`
  const unreadableSince = Date.now()
  for (;;) {
    if (createWith(file, content)) break
    const holder = readHolder(file)
    if (holder === 'missing') continue // given up meanwhile: try again
    if (holder && holder.pid !== process.pid && alive(holder)) throw new DataDirInUse(dataDir, holder.pid)
    // Half-written by a process that made it with O_EXCL a moment ago: wait for its content.
    if (!holder && Date.now() - unreadableSince < UNREADABLE_WAIT_MS) {
      await sleep(20)
      continue
    }
    // Stale (its process is gone), or left by an earlier run of this very pid: take it over.
    if (!(await takeOver(dataDir, file, holder))) await sleep(20)
  }
  held.set(dataDir, { count: 1, content })
  if (!exitHook) {
    exitHook = true
    // A process that exits without release() (process.exit after a failed start) leaves no file.
    process.once('exit', () => {
      for (const [dir, h] of held) removeIfMine(join(dir, LOCK_FILE), h.content)
    })
  }
  return lock
}

/**
 * Removes the stale lock `seen`, under the takeover lock: only the process holding
 * that removes it, and only if it is still the one that was judged stale (another
 * process may have taken it over meanwhile). True when it was removed.
 */
async function takeOver(dataDir: string, file: string, seen: Holder | undefined): Promise<boolean> {
  const guard = join(dataDir, TAKEOVER_FILE)
  if (!createWith(guard, `${process.pid}\n${processStart(process.pid) ?? ''}\n`)) {
    // Another process is taking over; if it died doing so, its guard is stale too.
    const other = readHolder(guard)
    if (other !== 'missing' && (!other || !alive(other))) rmSync(guard, { force: true })
    return false
  }
  try {
    if (!sameHolder(seen, readHolder(file))) return false
    rmSync(file, { force: true })
    return true
  } finally {
    rmSync(guard, { force: true })
  }
}

function removeIfMine(file: string, content: string) {
  try {
    if (readFileSync(file, 'utf8') === content) rmSync(file, { force: true })
  } catch {}
}
