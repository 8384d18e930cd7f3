/**
 * Headless Chromium driven over the DevTools protocol (CDP), with nothing but Bun:
 * the browser is started with `--remote-debugging-port=0`, prints the WebSocket
 * address it chose, and is spoken to over Bun's WebSocket. Enough of CDP for a
 * test to open a page, see every request the page (and its workers) makes, read
 * the DOM and take a screenshot.
 *
 * Every host but the loopback interface is made unresolvable (host resolver rules),
 * so a page that reaches for the internet fails visibly instead of depending on it.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

/** The Chromium on PATH (Debian names it `chromium`, Ubuntu `chromium-browser`), if any. */
export function findChromium(): string | undefined {
  for (const name of ['chromium', 'chromium-browser', 'google-chrome-stable', 'google-chrome']) {
    const path = Bun.which(name)
    if (path) return path
  }
  return undefined
}

export interface CdpEvent {
  method: string
  params: any
  sessionId?: string
}

/** Resolves with `value`, or rejects after `ms` saying what was awaited: every wait on the browser is bounded. */
function within<T>(value: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`headless chromium: no ${what} within ${ms} ms`)), ms)
  })
  return Promise.race([value, expired]).finally(() => clearTimeout(timer))
}

export class HeadlessChromium {
  private nextId = 1
  private pending = new Map<number, { resolve: (r: any) => void; reject: (e: Error) => void; method: string }>()
  private listeners = new Set<(e: CdpEvent) => void>()

  private constructor(
    private proc: ReturnType<typeof Bun.spawn>,
    private ws: WebSocket,
    private profile: string,
  ) {
    ws.addEventListener('message', (m) => {
      const msg = JSON.parse(String(m.data))
      if (typeof msg.id === 'number') {
        const p = this.pending.get(msg.id)
        this.pending.delete(msg.id)
        if (msg.error) p?.reject(new Error(`${p.method}: ${msg.error.message}`))
        else p?.resolve(msg.result)
      } else {
        for (const l of this.listeners) l(msg)
      }
    })
    ws.addEventListener('close', () => {
      for (const p of this.pending.values()) p.reject(new Error(`${p.method}: the DevTools connection closed`))
      this.pending.clear()
    })
  }

  static async launch(executable: string, opts: { width?: number; height?: number } = {}): Promise<HeadlessChromium> {
    const profile = mkdtempSync(join(tmpdir(), 'voice-chromium-'))
    const args = [
      '--headless=new',
      '--remote-debugging-port=0',
      '--remote-debugging-address=127.0.0.1',
      `--user-data-dir=${profile}`,
      `--window-size=${opts.width ?? 1280},${opts.height ?? 900}`,
      '--no-first-run',
      '--no-default-browser-check',
      '--disable-gpu',
      '--disable-dev-shm-usage',
      // The browser's own traffic (updates, sync, safe browsing) is not the page's: keep it off the wire.
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--disable-extensions',
      '--disable-default-apps',
      '--no-pings',
      // A tab opened over CDP may count as hidden: its timers would be throttled to one wake-up in seconds.
      '--disable-background-timer-throttling',
      '--disable-renderer-backgrounding',
      '--disable-backgrounding-occluded-windows',
      '--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1',
      // Chromium's sandbox refuses to run as root (containers, CI).
      ...(process.getuid?.() === 0 ? ['--no-sandbox'] : []),
      'about:blank',
    ]
    const proc = Bun.spawn([executable, ...args], { stdin: 'ignore', stdout: 'ignore', stderr: 'pipe' })
    try {
      const endpoint = await within(devtoolsEndpoint(proc.stderr as ReadableStream<Uint8Array>), 30_000, 'DevTools address on stderr')
      const ws = new WebSocket(endpoint)
      await within(
        new Promise<void>((resolve, reject) => {
          ws.addEventListener('open', () => resolve(), { once: true })
          ws.addEventListener('error', () => reject(new Error(`cannot connect to ${endpoint}`)), { once: true })
        }),
        10_000,
        'DevTools connection',
      )
      return new HeadlessChromium(proc, ws, profile)
    } catch (e) {
      proc.kill('SIGKILL')
      await proc.exited
      rmSync(profile, { recursive: true, force: true })
      throw e
    }
  }

  /** One CDP command; with `sessionId`, to that attached target. */
  send<T = any>(method: string, params: Record<string, unknown> = {}, sessionId?: string): Promise<T> {
    const id = this.nextId++
    const reply = new Promise<T>((resolve, reject) => this.pending.set(id, { resolve, reject, method }))
    this.ws.send(JSON.stringify({ id, method, params, ...(sessionId ? { sessionId } : {}) }))
    return within(reply, 120_000, `answer to ${method}`)
  }

  /** Every event from now on, from every session; returns the unsubscribe. */
  onEvent(listener: (e: CdpEvent) => void): () => void {
    this.listeners.add(listener)
    return () => this.listeners.delete(listener)
  }

  /** The next event `method` (matching `where`) within `ms`. Subscribe before the command that causes it. */
  nextEvent(method: string, ms: number, where: (e: CdpEvent) => boolean = () => true): Promise<CdpEvent> {
    let off = () => {}
    const seen = new Promise<CdpEvent>((resolve) => {
      off = this.onEvent((e) => {
        if (e.method === method && where(e)) resolve(e)
      })
    })
    return within(seen, ms, method).finally(() => off())
  }

  /**
   * A new tab, attached in flat mode. Its workers are attached too (and paused until
   * `prepare` has run on them), so a request made from a worker is seen like the page's.
   */
  async newPage(prepare: (sessionId: string) => Promise<unknown>): Promise<{ sessionId: string }> {
    const { targetId } = await this.send('Target.createTarget', { url: 'about:blank' })
    const { sessionId } = await this.send('Target.attachToTarget', { targetId, flatten: true })
    this.onEvent((e) => {
      if (e.method !== 'Target.attachedToTarget') return
      const child: string = e.params.sessionId
      prepare(child)
        .catch(() => {})
        .finally(() => this.send('Runtime.runIfWaitingForDebugger', {}, child).catch(() => {}))
    })
    await prepare(sessionId)
    await this.send('Target.setAutoAttach', { autoAttach: true, waitForDebuggerOnStart: true, flatten: true }, sessionId)
    return { sessionId }
  }

  async close(): Promise<void> {
    await this.send('Browser.close').catch(() => {})
    this.ws.close()
    const exited = await within(this.proc.exited, 10_000, 'exit after Browser.close').catch(() => undefined)
    if (exited === undefined) {
      this.proc.kill('SIGKILL')
      await this.proc.exited
    }
    rmSync(this.profile, { recursive: true, force: true })
  }
}

/** Reads stderr up to "DevTools listening on ws://…", then keeps draining it so the browser never blocks on a full pipe. */
async function devtoolsEndpoint(stderr: ReadableStream<Uint8Array>): Promise<string> {
  const reader = stderr.getReader()
  const decoder = new TextDecoder()
  let text = ''
  for (;;) {
    const { value, done } = await reader.read()
    if (done) throw new Error(`chromium exited before it listened:\n${text.slice(-2000)}`)
    text += decoder.decode(value, { stream: true })
    const m = text.match(/DevTools listening on (ws:\/\/\S+)/)
    if (m) {
      void (async () => {
        while (!(await reader.read().catch(() => ({ done: true }))).done);
      })()
      return m[1]!
    }
  }
}
