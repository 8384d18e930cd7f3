/**
 * The paced socket under postgres.js (see paced-socket.ts): over a real Unix socket
 * whose reader lags, every byte arrives once and in order, callbacks run, end()
 * waits for what is queued, and the runtime's own buffer never holds more than one
 * piece; then through openDatabase, a statement far bigger than a piece reaches the
 * server in pieces and comes back whole.
 */
import { afterAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { mkdtempSync, rmSync } from 'node:fs'
import { createServer, type Server, Socket } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { freshDataDir } from '../../test/support/data-dir'
import { startTlsPostgres, tlsPostgresUnavailable } from '../../test/support/tls-postgres'
import { openDatabase, queryRows } from './client'
import { PIECE_BYTES, pace, pacedSocketFactory } from './paced-socket'

/** Why this machine cannot start a TLS PostgreSQL server, if it cannot. */
const noTls = await tlsPostgresUnavailable()

const folder = mkdtempSync(join(tmpdir(), 'paced-socket-'))
afterAll(() => rmSync(folder, { recursive: true, force: true }))

/** A Unix socket server that reads in bursts, paused in between (so the writer's kernel buffer fills), and answers what it got. */
async function laggingReader(path: string): Promise<{ server: Server; received: Promise<Buffer> }> {
  let resolve!: (b: Buffer) => void
  const received = new Promise<Buffer>((r) => (resolve = r))
  const server = createServer((conn) => {
    const parts: Buffer[] = []
    conn.on('data', (d) => {
      parts.push(Buffer.from(d))
      conn.pause()
      setTimeout(() => conn.resume(), 1)
    })
    conn.on('end', () => resolve(Buffer.concat(parts)))
  })
  await new Promise<void>((r) => server.listen(path, r))
  return { server, received }
}

/** A lagging reader on a fresh Unix socket, and a paced socket connected to it (paced after connect(), as the factory does). */
async function pacedToLaggingReader(name: string) {
  const path = join(folder, name)
  const { server, received } = await laggingReader(path)
  const socket = new Socket()
  socket.connect(path)
  pace(socket)
  await new Promise<void>((r) => socket.once('connect', r))
  return { server, received, socket }
}

/** Chunk i: its length varies around the piece size, its bytes say which chunk it is. */
const chunk = (i: number) => Buffer.alloc(1 + ((i * 7919) % (3 * PIECE_BYTES)), i % 251)

describe('a paced socket', () => {
  test('delivers every chunk once and in order behind a lagging reader, the runtime never holding more than two pieces', async () => {
    const { server, received, socket } = await pacedToLaggingReader('order.sock')
    const chunks = Array.from({ length: 120 }, (_, i) => chunk(i))
    let largestBuffered = 0
    let callbacks = 0
    for (const [i, c] of chunks.entries()) {
      socket.write(c, () => callbacks++)
      largestBuffered = Math.max(largestBuffered, socket.writableLength)
      if (i % 10 === 9) await new Promise((r) => setImmediate(r))
    }
    socket.end()
    const got = await received
    server.close()
    expect(got.equals(Buffer.concat(chunks))).toBe(true)
    expect(callbacks).toBe(chunks.length)
    // Without pacing the runtime buffers everything the kernel has not taken: megabytes here. Paced, it
    // holds at most what it took below its high-water mark (the piece size) and one piece more.
    expect(largestBuffered).toBeLessThanOrEqual(2 * PIECE_BYTES)
  })

  test('end() with bytes still queued sends them, then its own, then closes', async () => {
    const { server, received, socket } = await pacedToLaggingReader('end.sock')
    const body = Buffer.alloc(4 * PIECE_BYTES, 7)
    socket.write(body)
    socket.end(Buffer.from('bye'))
    const got = await received
    server.close()
    expect(got.length).toBe(body.length + 3)
    expect(got.subarray(body.length).toString()).toBe('bye')
  })

  test('a refused connection reports its error and closes, as postgres.js expects of its own socket', async () => {
    const socket = pacedSocketFactory()({ host: ['127.0.0.1'], port: [1] })
    const error = await new Promise<NodeJS.ErrnoException>((r) => socket.once('error', r))
    await new Promise<void>((r) => (socket.destroyed ? r() : socket.once('close', () => r())))
    expect(error.code).toBe('ECONNREFUSED')
  })
})

describe('connections opened by openDatabase', () => {
  /** Records the largest write handed to the runtime's sockets while `fn` runs. */
  async function largestWrite(fn: () => Promise<void>): Promise<number> {
    const original = Socket.prototype.write
    let largest = 0
    Socket.prototype.write = function (this: Socket, data: unknown, ...rest: unknown[]) {
      if (data instanceof Uint8Array) largest = Math.max(largest, data.length)
      return (original as (...args: unknown[]) => boolean).call(this, data, ...rest)
    } as typeof original
    try {
      await fn()
    } finally {
      Socket.prototype.write = original
    }
    return largest
  }

  const roundTrip = async (open: () => ReturnType<typeof openDatabase>) => {
    const text = 'x'.repeat(8 * PIECE_BYTES)
    let lengths: number[] = []
    const largest = await largestWrite(async () => {
      const database = await open()
      try {
        lengths = await Promise.all(
          [0, 1, 2].map(async (i) => (await queryRows<{ n: number }>(database.db, sql`select length(${text + i}::text)::int as n`))[0]!.n),
        )
      } finally {
        await database.close()
      }
    })
    expect(lengths).toEqual([text.length + 1, text.length + 1, text.length + 1])
    expect(largest).toBeLessThanOrEqual(PIECE_BYTES)
  }

  test('the embedded PostgreSQL server gets a half-megabyte statement in pieces and answers it whole', async () => {
    const data = freshDataDir('paced-socket')
    try {
      await roundTrip(() => openDatabase({ dataDir: data.dataDir, poolSize: 2 }))
    } finally {
      await data.dispose()
    }
  }, 60_000)

  // Managed PostgreSQL services ask for TLS: postgres.js upgrades the socket this module made after its SSLRequest.
  test.skipIf(!!noTls)(
    `a server that requires TLS (sslmode=require) gets it, and the statement whole${noTls ? ` (skipped: ${noTls})` : ''}`,
    async () => {
      const server = await startTlsPostgres()
      try {
        const database = await openDatabase({ databaseUrl: server.url, dataDir: 'memory://', poolSize: 2 })
        try {
          const text = 'x'.repeat(8 * PIECE_BYTES)
          const rows = await Promise.all(
            [0, 1].map(
              async () =>
                (
                  await queryRows<{ n: number; ssl: boolean }>(
                    database.db,
                    sql`select length(${text}::text)::int as n, (select ssl from pg_stat_ssl where pid = pg_backend_pid()) as ssl`,
                  )
                )[0]!,
            ),
          )
          expect(rows).toEqual([
            { n: text.length, ssl: true },
            { n: text.length, ssl: true },
          ])
        } finally {
          await database.close()
        }
      } finally {
        await server.stop()
      }
    },
    60_000,
  )

  const postgres = process.env.DATABASE_URL
  test.skipIf(!postgres)(
    'a PostgreSQL server (DATABASE_URL) too',
    async () => {
      await roundTrip(() => openDatabase({ databaseUrl: postgres!, dataDir: 'memory://', poolSize: 2 }))
    },
    30_000,
  )
})
