/**
 * Child processes of a bench run: every process started here is tracked and
 * killed at the end, on error, on Ctrl-C and when the run's time budget is spent.
 */
import { createServer } from 'node:net'
import { openSync, closeSync, readFileSync, existsSync } from 'node:fs'
import type { Subprocess } from 'bun'

export interface Child {
  name: string
  proc: Subprocess
  /** File holding the child's stdout and stderr (when not captured). */
  logFile?: string
  /** Last lines of the log file, for error messages. */
  tail(lines?: number): string
}

const children = new Set<Child>()

export function spawnLogged(name: string, cmd: string[], opts: { env?: Record<string, string | undefined>; logFile: string; cwd?: string }): Child {
  const fd = openSync(opts.logFile, 'a')
  const proc = Bun.spawn(cmd, { cwd: opts.cwd, env: opts.env as Record<string, string>, stdin: 'ignore', stdout: fd, stderr: fd })
  closeSync(fd)
  const child: Child = {
    name,
    proc,
    logFile: opts.logFile,
    tail(lines = 20) {
      if (!existsSync(opts.logFile)) return ''
      return readFileSync(opts.logFile, 'utf8').trimEnd().split('\n').slice(-lines).join('\n')
    },
  }
  children.add(child)
  proc.exited.then(() => children.delete(child))
  return child
}

/** Runs a command to completion, capturing stdout; killed after timeoutMs. */
export async function runCaptured(
  name: string,
  cmd: string[],
  opts: { env?: Record<string, string | undefined>; timeoutMs: number; cwd?: string },
): Promise<{ code: number; stdout: string; stderr: string }> {
  const proc = Bun.spawn(cmd, { cwd: opts.cwd, env: opts.env as Record<string, string>, stdin: 'ignore', stdout: 'pipe', stderr: 'pipe' })
  const child: Child = { name, proc, tail: () => '' }
  children.add(child)
  const timer = setTimeout(() => proc.kill('SIGKILL'), opts.timeoutMs)
  try {
    const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited])
    return { code, stdout, stderr }
  } finally {
    clearTimeout(timer)
    children.delete(child)
  }
}

/** Stops one child: SIGTERM, then SIGKILL if it has not exited within graceMs. */
export async function stopChild(child: Child, graceMs = 3000): Promise<void> {
  if (child.proc.exitCode !== null || child.proc.signalCode !== null) {
    children.delete(child)
    return
  }
  child.proc.kill('SIGTERM')
  const exited = await Promise.race([child.proc.exited.then(() => true), Bun.sleep(graceMs).then(() => false)])
  if (!exited) {
    child.proc.kill('SIGKILL')
    await Promise.race([child.proc.exited, Bun.sleep(1000)])
  }
  children.delete(child)
}

export async function stopAll(): Promise<void> {
  await Promise.all([...children].map((c) => stopChild(c)))
}

/** Synchronous last resort (process 'exit' handler): SIGKILL whatever is left. */
export function killAllNow(): void {
  for (const c of children) {
    try {
      c.proc.kill('SIGKILL')
    } catch {}
  }
  children.clear()
}

/** A free TCP port on 127.0.0.1 (asks the OS, then releases it). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer()
    srv.unref()
    srv.on('error', reject)
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address()
      const port = typeof addr === 'object' && addr ? addr.port : 0
      srv.close(() => resolve(port))
    })
  })
}

/** Polls url until it answers 200, the child dies, or timeoutMs passes. */
export async function waitForHttp(url: string, child: Child, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (Date.now() < deadline) {
    if (child.proc.exitCode !== null || child.proc.signalCode !== null) {
      throw new Error(`${child.name} exited (${child.proc.exitCode ?? child.proc.signalCode}) before it was ready:\n${child.tail()}`)
    }
    try {
      const res = await fetch(url, { signal: AbortSignal.timeout(1000) })
      if (res.status === 200) return
    } catch {}
    await Bun.sleep(100)
  }
  throw new Error(`${child.name} was not ready at ${url} within ${timeoutMs} ms:\n${child.tail()}`)
}

// ---- clean-up tasks (data a bench created), run on success, error and Ctrl-C ----

const cleanups = new Set<() => Promise<void>>()

/** Registers a clean-up task; returns a function that runs it now (once) instead. */
export function onCleanup(task: () => Promise<void>): () => Promise<void> {
  let running: Promise<void> | undefined
  const once = () => {
    // Callers racing (Ctrl-C during the scenario's own clean-up) share one run.
    running ??= task().finally(() => cleanups.delete(once))
    return running
  }
  cleanups.add(once)
  return once
}

/** Runs the clean-up tasks still registered (after an interruption or error). */
export async function runCleanups(): Promise<void> {
  for (const task of [...cleanups]) await task().catch((e) => console.warn(`clean-up failed: ${e instanceof Error ? e.message : e}`))
}
