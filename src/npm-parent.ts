/**
 * A service started by `npm start` follows npm's life. npm runs the script in a shell
 * and hands a SIGTERM it gets to that shell, which dies without passing it on: the
 * service would go on running on its port and DATA_DIR after npm exited (`kill %1`
 * on a background `npm start`, a supervisor or `timeout` signalling npm). The shell's
 * end shows here as a new parent process, and the service then stops in order, as
 * it does on SIGTERM.
 *
 * Only under npm (npm sets `npm_lifecycle_event` for the script it runs): a service
 * started by other means keeps running when its parent goes (nohup, a shell closed
 * behind a detached process).
 */

/** How often the parent is looked at: a stop this much after npm's is soon enough, and the look costs one getppid. */
export const PARENT_CHECK_MS = 500

export interface NpmParentWatch {
  stop(): void
}

/**
 * Calls `onGone` once when the process's parent changes, if it was started by an npm
 * script; otherwise does nothing. `ppid` reads the current parent's pid.
 */
export function watchNpmParent(
  env: Record<string, string | undefined>,
  onGone: (was: number, now: number) => void,
  ppid: () => number = () => process.ppid,
  intervalMs = PARENT_CHECK_MS,
): NpmParentWatch {
  if (!env.npm_lifecycle_event) return { stop() {} }
  const first = ppid()
  const timer = setInterval(() => {
    const now = ppid()
    if (now === first) return
    clearInterval(timer)
    onGone(first, now)
  }, intervalMs)
  // Never the reason the process stays up.
  timer.unref?.()
  return { stop: () => clearInterval(timer) }
}
