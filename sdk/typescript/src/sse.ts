// Server-sent events read from a fetch body, framed as the HTML standard's
// "event stream interpretation" says: lines end in CRLF, LF or CR; a blank
// line dispatches; `:` lines are comments (the server's keep-alives); one
// space after the colon is dropped; `data` lines join with LF.

/** One dispatched event. `id` is undefined when the event had no `id` field. */
export interface SseMessage {
  event: string
  data: string
  id: string | undefined
  retry: number | undefined
}

/** The events of a `text/event-stream` body, in order; ends when the body does. */
export async function* parseSse(body: ReadableStream<Uint8Array>): AsyncGenerator<SseMessage> {
  const reader = body.getReader()
  const decoder = new TextDecoder('utf-8')
  let buffer = ''
  let sawCr = false
  let event = ''
  let data: string[] = []
  let hasData = false
  let id: string | undefined
  let retry: number | undefined

  const dispatch = (): SseMessage | undefined => {
    const message = hasData ? { event: event || 'message', data: data.join('\n'), id, retry } : undefined
    event = ''
    data = []
    hasData = false
    id = undefined
    retry = undefined
    return message
  }

  const line = (text: string): SseMessage | undefined => {
    if (text === '') return dispatch()
    if (text.startsWith(':')) return undefined
    const colon = text.indexOf(':')
    const field = colon === -1 ? text : text.slice(0, colon)
    let value = colon === -1 ? '' : text.slice(colon + 1)
    if (value.startsWith(' ')) value = value.slice(1)
    switch (field) {
      case 'event':
        event = value
        break
      case 'data':
        data.push(value)
        hasData = true
        break
      case 'id':
        if (!value.includes('\0')) id = value
        break
      case 'retry':
        if (/^\d+$/.test(value)) retry = Number(value)
        break
      default:
        break
    }
    return undefined
  }

  try {
    for (;;) {
      const { done, value } = await reader.read()
      if (done) break
      buffer += decoder.decode(value, { stream: true })
      let start = 0
      for (let i = 0; i < buffer.length; i++) {
        const c = buffer.charCodeAt(i)
        if (c === 10 /* \n */ && sawCr) {
          // the LF of a CRLF whose CR ended the previous line
          sawCr = false
          start = i + 1
          continue
        }
        sawCr = false
        if (c === 10 || c === 13) {
          const message = line(buffer.slice(start, i))
          if (c === 13) sawCr = true
          start = i + 1
          if (message !== undefined) yield message
        }
      }
      buffer = buffer.slice(start)
    }
    // An event not ended by a blank line is incomplete: dropped, as the
    // standard says, so a cut connection never yields half an event.
  } finally {
    // frees the connection when the reader stopped early (a break, an abort)
    await reader.cancel().catch(() => undefined)
  }
}
