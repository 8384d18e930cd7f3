/**
 * Reading a server-sent event stream (the WHATWG event-stream format): messages
 * (`id`, `event`, `data` lines, ended by a blank line), comments (lines starting
 * with a colon) and `retry`. GET /v1/events sends one `data` line per message.
 */

export type SseItem = { kind: 'message'; id?: string; event: string; data: string } | { kind: 'comment'; text: string } | { kind: 'retry'; ms: number }

export async function* readSse(body: ReadableStream<Uint8Array>): AsyncGenerator<SseItem> {
  const decoder = new TextDecoder()
  let buffer = ''
  let id: string | undefined
  let event = ''
  let data: string[] = []
  const reader = body.getReader()
  try {
    for (;;) {
      const { done, value } = await reader.read()
      if (done) return
      buffer += decoder.decode(value, { stream: true })
      for (;;) {
        const m = /\r\n|\r|\n/.exec(buffer)
        // A lone \r at the end may be the first half of \r\n: wait for more.
        if (!m || (m[0] === '\r' && m.index === buffer.length - 1)) break
        const line = buffer.slice(0, m.index)
        buffer = buffer.slice(m.index + m[0].length)
        if (line === '') {
          if (data.length > 0) yield { kind: 'message', id, event: event || 'message', data: data.join('\n') }
          event = ''
          data = []
          continue
        }
        if (line.startsWith(':')) {
          yield { kind: 'comment', text: line.slice(1).trim() }
          continue
        }
        const colon = line.indexOf(':')
        const field = colon === -1 ? line : line.slice(0, colon)
        let value = colon === -1 ? '' : line.slice(colon + 1)
        if (value.startsWith(' ')) value = value.slice(1)
        if (field === 'data') data.push(value)
        else if (field === 'event') event = value
        else if (field === 'id' && !value.includes('\0')) id = value
        else if (field === 'retry' && /^\d+$/.test(value)) yield { kind: 'retry', ms: Number(value) }
      }
    }
  } finally {
    reader.releaseLock()
    await body.cancel().catch(() => {})
  }
}
