/**
 * The real service as a child process (`bun src/main.ts`), for tests that kill,
 * restart or run several processes side by side. The child gets exactly the
 * settings given here: none of the service's settings leak in from the test's own
 * environment.
 */
import type { Subprocess } from 'bun'
import { join } from 'node:path'
import { collectOutput, freePort } from './scratch-postgres'
import { callApi, type CallOptions, TEST_MASTER_KEY } from './service'

const ROOT = join(import.meta.dir, '..', '..')

/** Every setting the service reads. */
export const SERVICE_SETTINGS = [
  'PORT',
  'HOST',
  'BASE_URL',
  'DATA_DIR',
  'DATABASE_URL',
  'NATS_URL',
  'VOICE_TEST_KEY',
  'VOICE_LIVE_KEY',
  'VOICE_LIVE_ENABLED',
  'VOICE_ADMIN_TOKEN',
  'VOICE_CLOCK_SPEED',
  'WEBHOOK_RETRY_INTERVAL_S',
  'WEBHOOK_TIMEOUT_S',
  'WEBHOOK_ALLOW_PRIVATE_TARGETS',
  'SIP_PORT',
  'SIP_HOST',
  'RTP_PORT_MIN',
  'RTP_PORT_MAX',
  'EMBEDDED_DATABASE',
  'RATE_LIMIT_PER_SECOND',
  'RATE_LIMIT_BURST',
  'LOG_LEVEL',
  'SMTP_URL',
  'MAIL_FROM',
  'SHARD_LEASE_MS',
  'EVENT_STREAM_HEARTBEAT_S',
  'EVENT_STREAM_POLL_S',
  'VOICE_MASTER_KEY',
  'VOICE_MASTER_KEY_PREVIOUS',
]

export interface ServiceProcess {
  proc: Subprocess<'ignore', 'pipe', 'pipe'>
  url: string
  /** stdout and stderr so far. */
  log: { text: string }
  call<T = any>(method: string, path: string, o?: CallOptions): Promise<{ status: number; body: T; headers: Headers }>
  /** SIGKILL (when still running), then waits for the exit. */
  kill(): Promise<void>
}

/**
 * Starts `bun src/main.ts [args]` (or `command [args]`) with these settings on a free
 * loopback port; resolves once /readyz answers 200.
 */
export async function startServiceProcess(
  settings: Record<string, string>,
  args: string[] = [],
  readyWithinMs = 45_000,
  command: string[] = [process.execPath, 'src/main.ts'],
): Promise<ServiceProcess> {
  const port = await freePort()
  const env: Record<string, string> = {}
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined && !SERVICE_SETTINGS.includes(k)) env[k] = v
  // Processes on one PostgreSQL database share its master key; on a DATA_DIR of their own, its key file.
  const key = settings.DATABASE_URL && !('VOICE_MASTER_KEY' in settings) ? { VOICE_MASTER_KEY: TEST_MASTER_KEY } : {}
  Object.assign(env, { HOST: '127.0.0.1', SIP_PORT: '0', RATE_LIMIT_PER_SECOND: '0', LOG_LEVEL: 'warn', ...key, ...settings, PORT: String(port) })
  const proc = Bun.spawn([...command, ...args], { cwd: ROOT, env, stdin: 'ignore', stdout: 'pipe', stderr: 'pipe' })
  const url = `http://127.0.0.1:${port}`
  const log = { text: '' }
  collectOutput(proc.stdout, log)
  collectOutput(proc.stderr, log)
  const sp: ServiceProcess = {
    proc,
    url,
    log,
    call: (method, path, o) => callApi(url, method, path, o),
    async kill() {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGKILL')
      await proc.exited
    },
  }
  const deadline = Date.now() + readyWithinMs
  while (Date.now() < deadline) {
    if (proc.exitCode !== null) throw new Error(`service exited with ${proc.exitCode} before it was ready:\n${log.text}`)
    const res = await fetch(`${url}/readyz`).catch(() => undefined)
    if (res?.status === 200) return sp
    await Bun.sleep(100)
  }
  await sp.kill()
  throw new Error(`service not ready within ${readyWithinMs} ms:\n${log.text}`)
}
