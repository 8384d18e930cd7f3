/**
 * A database of its own on the PostgreSQL server named by DATABASE_URL, dropped
 * by dispose(): for tests that must not share the delivery lock or leftovers of
 * database `test` with other files. Without DATABASE_URL there is nothing to do.
 */
import { randomBytes } from 'node:crypto'
import { createSocket } from 'node:dgram'
import { createServer } from 'node:net'
import postgres from 'postgres'

export interface ScratchDatabase {
  /** DATABASE_URL of the scratch database, or undefined without PostgreSQL. */
  url: string | undefined
  /** Environment for a service on it (empty without PostgreSQL). */
  env: Record<string, string>
  dispose(): Promise<void>
}

/** `base`: the server (default DATABASE_URL); `params`: connection parameters for the scratch database's URL. */
export async function scratchPostgres(label: string, opts: { base?: string; params?: Record<string, string> } = {}): Promise<ScratchDatabase> {
  const base = opts.base ?? process.env.DATABASE_URL
  if (!base) return { url: undefined, env: {}, dispose: async () => {} }
  const name = `voice_${label}_${Date.now()}_${randomBytes(3).toString('hex')}`
  const server = postgres(base, { max: 1, onnotice: () => {} })
  await server.unsafe(`create database "${name}"`)
  const url = new URL(base)
  url.pathname = `/${name}`
  for (const [k, v] of Object.entries(opts.params ?? {})) url.searchParams.set(k, v)
  return {
    url: url.toString(),
    env: { DATABASE_URL: url.toString() },
    async dispose() {
      await server.unsafe(`drop database if exists "${name}" with (force)`).catch(() => {})
      await server.end()
    },
  }
}

/** Collects a child process's output as text, as it arrives. */
export function collectOutput(stream: ReadableStream<Uint8Array>, sink: { text: string }) {
  const decoder = new TextDecoder()
  void (async () => {
    for await (const chunk of stream) sink.text += decoder.decode(chunk, { stream: true })
  })().catch(() => {})
}

/** A TCP port free on 127.0.0.1 right now, for a child process to listen on. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer()
    srv.unref()
    srv.on('error', reject)
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as { port: number }
      srv.close(() => resolve(port))
    })
  })
}

/**
 * A port free for both TCP and UDP on 127.0.0.1 (a SIP server or a SIP phone binds both,
 * or UDP alone): freePort checks TCP only, and a UDP socket of an earlier test (a phone
 * not yet reaped, an RTP port) could hold the same number. Tries a few, then gives up.
 */
export async function freeSipPort(): Promise<number> {
  for (let attempt = 0; attempt < 20; attempt++) {
    const port = await freePort()
    const free = await new Promise<boolean>((resolve) => {
      const udp = createSocket('udp4')
      udp.once('error', () => resolve(false))
      udp.bind(port, '127.0.0.1', () => udp.close(() => resolve(true)))
    })
    if (free) return port
  }
  throw new Error('no port free for both TCP and UDP in 20 tries')
}
