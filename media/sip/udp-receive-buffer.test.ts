import { describe, expect, test } from 'bun:test'
import { openSipTransports, SIP_UDP_RECEIVE_BUFFER } from './transport'
import { raiseReceiveBuffer, receiveBufferSize } from './udp-receive-buffer'

const linux = process.platform === 'linux'

describe.skipIf(!linux)('UDP receive buffers (Linux: SO_RCVBUF through libc)', () => {
  test('a socket’s receive buffer is raised beyond the kernel’s default', async () => {
    const socket = await Bun.udpSocket({ hostname: '127.0.0.1', port: 0, socket: { data() {} } })
    try {
      const before = receiveBufferSize(socket as { fd?: number })
      expect(before).toBeGreaterThan(0)
      const after = raiseReceiveBuffer(socket as { fd?: number }, 4 * before!)
      // Root (CAP_NET_ADMIN) goes past net.core.rmem_max; others up to it, which may be the default.
      if (process.getuid?.() === 0) expect(after).toBeGreaterThan(before!)
      else expect(after).toBeGreaterThanOrEqual(before!)
    } finally {
      socket.close()
    }
  })

  test('the SIP server’s UDP socket gets the bigger buffer (up to what the kernel allows)', async () => {
    const transports = await openSipTransports({ host: '127.0.0.1', port: 0 }, { message() {} })
    const probe = await Bun.udpSocket({ hostname: '127.0.0.1', port: 0, socket: { data() {} } })
    try {
      const kernelDefault = receiveBufferSize(probe as { fd?: number })!
      // What any socket of this process can be given: the server asked for it.
      const possible = raiseReceiveBuffer(probe as { fd?: number }, SIP_UDP_RECEIVE_BUFFER)!
      expect(transports.udpReceiveBuffer).toBe(possible)
      if (process.getuid?.() === 0) expect(transports.udpReceiveBuffer).toBeGreaterThan(kernelDefault)
    } finally {
      probe.close()
      await transports.close()
    }
  })

  test('a socket it cannot reach is left alone', () => {
    expect(raiseReceiveBuffer({}, 1 << 20)).toBeUndefined()
    expect(receiveBufferSize({ fd: -1 })).toBeUndefined()
  })
})
