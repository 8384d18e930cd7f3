/**
 * A minimal HTTP/1.1 client for load processes: GET over keep-alive connections
 * (Bun.connect), the response's status, headers and body as text.
 *
 * Why not fetch: a load process shares the machine's two cores with the service it
 * measures, and Bun's fetch cost the provisioning bench about 110 µs of CPU per
 * request (its own thread, a Request and Headers per call, a timeout signal), a
 * quarter of the machine at 2,100 exchanges/s. This does what a phone's HTTP stack
 * does, nothing more: one request at a time per connection, a connection per phone
 * while it is busy, reused afterwards. It reads what the service sends (a
 * Content-Length body); anything else is an error, not a guess.
 */
import type { Socket } from 'bun'

export interface SimpleResponse {
  status: number
  /** Lowercase names; a repeated header's values joined with ", " except www-authenticate, kept as a list. */
  headers: Map<string, string>
  challenges: string[]
  body: string
}

interface Pending {
  resolve: (r: SimpleResponse) => void
  reject: (e: Error) => void
  timer: ReturnType<typeof setTimeout>
}

interface Connection {
  socket: Socket<Connection>
  buffer: Buffer
  /** What the socket did not take yet (written on drain). */
  unsent?: Buffer
  pending?: Pending
  closed: boolean
}

const HEADER_END = Buffer.from('\r\n\r\n')

export class KeepAliveHttp {
  private readonly idle: Connection[] = []
  private readonly all = new Set<Connection>()

  constructor(
    private readonly host: string,
    private readonly port: number,
    private readonly timeoutMs = 30_000,
  ) {}

  /** GET `path` with these headers (Host and Connection are added). */
  async get(path: string, headers: Record<string, string>): Promise<SimpleResponse> {
    const c = this.idle.pop() ?? (await this.open())
    let head = `GET ${path} HTTP/1.1\r\nHost: ${this.host}:${this.port}\r\nConnection: keep-alive\r\n`
    for (const [name, value] of Object.entries(headers)) head += `${name}: ${value}\r\n`
    const response = new Promise<SimpleResponse>((resolve, reject) => {
      const timer = setTimeout(() => {
        c.pending = undefined
        c.socket.end()
        reject(new Error(`GET ${path}: no response within ${this.timeoutMs} ms`))
      }, this.timeoutMs)
      c.pending = { resolve, reject, timer }
    })
    this.send(c, Buffer.from(`${head}\r\n`))
    try {
      return await response
    } finally {
      if (!c.closed) this.idle.push(c)
    }
  }

  close(): void {
    for (const c of this.all) c.socket.end()
    this.all.clear()
    this.idle.length = 0
  }

  private send(c: Connection, bytes: Buffer) {
    const written = c.socket.write(bytes)
    if (written < bytes.length) c.unsent = c.unsent ? Buffer.concat([c.unsent, bytes.subarray(written)]) : bytes.subarray(written)
  }

  private drained(c: Connection) {
    const rest = c.unsent
    c.unsent = undefined
    if (rest) this.send(c, rest)
  }

  private async open(): Promise<Connection> {
    const connection = { buffer: Buffer.alloc(0), closed: false } as Connection
    connection.socket = await Bun.connect<Connection>({
      hostname: this.host,
      port: this.port,
      data: connection,
      socket: {
        data: (socket, chunk) => this.received(socket.data, chunk),
        drain: (socket) => this.drained(socket.data),
        close: (socket) => this.lost(socket.data, new Error('connection closed')),
        error: (socket, error) => this.lost(socket.data, error),
      },
    })
    this.all.add(connection)
    return connection
  }

  private lost(c: Connection, error: Error) {
    c.closed = true
    this.all.delete(c)
    const i = this.idle.indexOf(c)
    if (i >= 0) this.idle.splice(i, 1)
    const p = c.pending
    c.pending = undefined
    if (p) {
      clearTimeout(p.timer)
      p.reject(error)
    }
  }

  private received(c: Connection, chunk: Buffer) {
    c.buffer = c.buffer.length === 0 ? chunk : Buffer.concat([c.buffer, chunk])
    const end = c.buffer.indexOf(HEADER_END)
    if (end < 0) return
    const lines = c.buffer.subarray(0, end).toString('latin1').split('\r\n')
    const status = Number(lines[0]!.split(' ')[1])
    const headers = new Map<string, string>()
    const challenges: string[] = []
    for (const line of lines.slice(1)) {
      const colon = line.indexOf(':')
      const name = line.slice(0, colon).trim().toLowerCase()
      const value = line.slice(colon + 1).trim()
      if (name === 'www-authenticate') challenges.push(value)
      headers.set(name, headers.has(name) ? `${headers.get(name)}, ${value}` : value)
    }
    const length = headers.get('content-length')
    if (length === undefined) {
      this.lost(c, new Error(`response without Content-Length (${lines[0]})`))
      c.socket.end()
      return
    }
    const total = end + HEADER_END.length + Number(length)
    if (c.buffer.length < total) return
    const body = c.buffer.subarray(end + HEADER_END.length, total).toString('utf8')
    c.buffer = c.buffer.subarray(total)
    const p = c.pending
    c.pending = undefined
    if (p) {
      clearTimeout(p.timer)
      p.resolve({ status, headers, challenges, body })
    }
  }
}
