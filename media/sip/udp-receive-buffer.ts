/**
 * A bigger kernel receive buffer for a UDP socket. The SIP socket takes every
 * phone's requests; the kernel's default (208 KiB on Linux, a few hundred
 * REGISTERs) overflows within a garbage collection or a database batch at a few
 * thousand requests a second, and each datagram dropped there comes back 500 ms
 * later as a retransmission, with more behind it: measured, a bench at 2,000
 * REGISTERs/s collapsed to 1,000-1,300/s with thousands of drops on this socket.
 * A bigger buffer turns such a burst into a short wait.
 *
 * Bun.udpSocket has no option for it, so this sets SO_RCVBUFFORCE (above the
 * system's net.core.rmem_max; needs CAP_NET_ADMIN), else SO_RCVBUF (capped at
 * rmem_max), through libc with bun:ffi. Linux only; elsewhere, or when libc cannot
 * be reached, the socket keeps its default and this says so (undefined).
 */
import { dlopen, FFIType, ptr } from 'bun:ffi'

const SOL_SOCKET = 1
const SO_RCVBUF = 8
const SO_RCVBUFFORCE = 33

type Libc = {
  setsockopt(fd: number, level: number, name: number, value: ReturnType<typeof ptr>, length: number): number
  getsockopt(fd: number, level: number, name: number, value: ReturnType<typeof ptr>, length: ReturnType<typeof ptr>): number
}

let libc: Libc | null | undefined

function loadLibc(): Libc | null {
  if (libc !== undefined) return libc
  libc = null
  if (process.platform !== 'linux') return libc
  try {
    libc = dlopen('libc.so.6', {
      setsockopt: { args: [FFIType.i32, FFIType.i32, FFIType.i32, FFIType.ptr, FFIType.u32], returns: FFIType.i32 },
      getsockopt: { args: [FFIType.i32, FFIType.i32, FFIType.i32, FFIType.ptr, FFIType.ptr], returns: FFIType.i32 },
    }).symbols as unknown as Libc
  } catch {
    libc = null
  }
  return libc
}

/** The socket's receive buffer as the kernel reports it (twice what was asked: its bookkeeping), or undefined. */
export function receiveBufferSize(socket: { readonly fd?: number }): number | undefined {
  const c = loadLibc()
  const fd = socket.fd
  if (!c || typeof fd !== 'number' || fd < 0) return undefined
  const value = new Int32Array(1)
  const length = new Uint32Array([4])
  return c.getsockopt(fd, SOL_SOCKET, SO_RCVBUF, ptr(value), ptr(length)) === 0 ? value[0] : undefined
}

/** Asks for a receive buffer of `bytes`; the size the kernel then reports, or undefined when it could not be set. */
export function raiseReceiveBuffer(socket: { readonly fd?: number }, bytes: number): number | undefined {
  const c = loadLibc()
  const fd = socket.fd
  if (!c || typeof fd !== 'number' || fd < 0) return undefined
  const value = new Int32Array([bytes])
  const set = c.setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, ptr(value), 4) === 0 || c.setsockopt(fd, SOL_SOCKET, SO_RCVBUF, ptr(value), 4) === 0
  return set ? receiveBufferSize(socket) : undefined
}
