/**
 * The socket under every postgres.js connection (its `socket` option).
 *
 * postgres.js hands each query to its socket as soon as it is built and never waits
 * for 'drain'. Bun's net.Socket (1.4) keeps whatever the kernel did not take in one
 * buffer, appends later writes to it and moves the unsent rest to its front after
 * every partial send, so the copying grows with the square of the backlog: 100 KB
 * writes queued behind one another reached a Unix socket at 80–110 MB/s, where the
 * same bytes written drain by drain go at 2 GB/s. A group commit's statements are such
 * writes (64–128 KB of JSON each). A paced socket keeps the bytes in a queue of its
 * own while the runtime's buffer is over its high-water mark and hands them over in
 * pieces of at most PIECE_BYTES, each once the last has drained, so that buffer never
 * holds more than two pieces (what it took below its mark, 64 KB, and one piece).
 * `npm run bench -- provisioning`: 2–7 % less service CPU per device, the devices
 * synced 0.1–0.3 s sooner, in three runs against three without.
 */
import { Socket } from 'node:net'

/** Most bytes given to the runtime's socket at once. */
export const PIECE_BYTES = 64 * 1024

type Done = (err?: Error | null) => void

/** What postgres.js passes to its `socket` option (its parsed options). */
export interface PostgresSocketOptions {
  host: string[]
  port: number[]
  /** A Unix socket's path, when the host is a folder. */
  path?: string | false
  ssl?: unknown
}

/**
 * postgres.js's `socket` option: a socket already connecting to the server the
 * options name (postgres.js writes its startup message at once; the socket holds it
 * until connected), paced unless TLS goes over it. A failed connection reports its
 * error and closes as postgres.js's own socket does. Several hosts are tried in turn,
 * one per connection, as postgres.js does.
 */
export function pacedSocketFactory() {
  let attempt = 0
  return (options: PostgresSocketOptions): Socket => {
    const socket = new Socket()
    let address: { host: string; port: number } | undefined
    if (options.path) socket.connect(options.path)
    else {
      const i = attempt++ % options.host.length
      address = { host: options.host[i]!, port: options.port[i] ?? options.port[0]! }
      socket.connect(address.port, address.host)
    }
    // After connect(), which puts the socket's own write back. TLS takes the socket over
    // (postgres.js removes its listeners, the drain one included): that one is left as it is.
    if (!options.ssl) pace(socket)
    // Read back by postgres.js's connection errors.
    return address ? Object.assign(socket, address) : socket
  }
}

/**
 * Makes the socket's write and end wait for 'drain' (see the header). Call it after
 * connect(): Bun's connect() sets the socket's write again.
 */
export function pace(socket: Socket): Socket {
  const write = socket.write.bind(socket) as (data: Uint8Array, done?: Done) => boolean
  const end = socket.end.bind(socket) as (data?: Uint8Array) => Socket
  const queue: { data: Uint8Array; done?: Done }[] = []
  /** An end() asked for behind queued bytes. */
  let ending: { data?: Uint8Array } | undefined

  const takePiece = (): { data: Uint8Array; done: Done[] } => {
    const head = queue[0]!
    if (head.data.length > PIECE_BYTES) {
      const data = head.data.subarray(0, PIECE_BYTES)
      head.data = head.data.subarray(PIECE_BYTES)
      return { data, done: [] }
    }
    const parts: Uint8Array[] = []
    const done: Done[] = []
    let size = 0
    while (queue.length > 0 && size + queue[0]!.data.length <= PIECE_BYTES) {
      const next = queue.shift()!
      parts.push(next.data)
      if (next.done) done.push(next.done)
      size += next.data.length
    }
    return { data: parts.length === 1 ? parts[0]! : Buffer.concat(parts, size), done }
  }

  const pump = () => {
    while (queue.length > 0 && !socket.writableNeedDrain && !socket.destroyed) {
      const piece = takePiece()
      const done = piece.done
      write(
        piece.data,
        done.length === 0
          ? undefined
          : (err) => {
              for (const d of done) d(err)
            },
      )
    }
    if (queue.length === 0 && ending) {
      const last = ending
      ending = undefined
      end(last.data)
    }
  }
  socket.on('drain', pump)

  socket.write = ((data: Uint8Array | string, encoding?: BufferEncoding | Done, done?: Done) => {
    const callback = typeof encoding === 'function' ? encoding : done
    const bytes = typeof data === 'string' ? Buffer.from(data, typeof encoding === 'string' ? encoding : 'utf8') : data
    if (queue.length === 0 && !socket.writableNeedDrain && bytes.length <= PIECE_BYTES) return write(bytes, callback)
    queue.push({ data: bytes, done: callback })
    pump()
    return false
  }) as typeof socket.write

  socket.end = ((data?: Uint8Array | (() => void)) => {
    const bytes = typeof data === 'function' ? undefined : data
    if (queue.length === 0) return end(bytes)
    ending = { data: bytes }
    return socket
  }) as typeof socket.end

  return socket
}
