// The streams of the API read as async iterators: a session's or a run's
// events and a process's output, which resume after a dropped connection
// with `Last-Event-ID` (the API's resume mechanism: every stored event comes
// exactly once, in order), and a streamed exec, which cannot resume (the
// server kills a command whose client went away).

import { errorFromEvent, PaddockError } from './errors.js'
import { linked } from './http.js'
import { parseSse, type SseMessage } from './sse.js'

/** How a resumable stream reconnects. */
export interface ReconnectOptions {
  /** Stops the stream: the iterator throws the signal's reason. */
  signal?: AbortSignal
  /**
   * Reconnections in a row without an event in between before the stream
   * gives up and throws what failed last (default 5, as `paddock run
   * --server`). 0: never reconnect.
   */
  maxRetries?: number
  /** The wait before a reconnection, times the failures in a row, at most 5 s (default 500 ms; an SSE `retry:` field replaces it). */
  retryDelayMs?: number
}

/** What a resumable stream does with one server-sent event. */
export interface Step<T> {
  /** What the iterator yields for it, if anything. */
  value?: T
  /** The stream is complete after this event. */
  end?: boolean
}

export interface ResumableSpec<T> {
  /** Opens the stream; `lastEventId` is the id to resume after (undefined the first time). */
  open: (lastEventId: string | undefined, signal: AbortSignal) => Promise<Response>
  /** Turns an event (never an `error` one) into what to yield. */
  step: (message: SseMessage) => Step<T>
  /** Whether the server closing the stream cleanly, before an `end` step, completes it. */
  closeIsEnd: boolean
  /** The id to resume after from the start (the `after` the caller asked, as a header). */
  lastEventId?: string | undefined
}

/**
 * An async iterable over a resumable event stream. Iterate it once; it
 * remembers the last id received (`lastEventId`) so a later stream can go on
 * from there, and counts its reconnections.
 */
export class ResumableStream<T> implements AsyncIterable<T> {
  /** The id of the last event received (the resume point), if any. */
  lastEventId: string | undefined
  /** How many times the stream reconnected after a dropped connection. */
  reconnects = 0
  readonly #spec: ResumableSpec<T>
  readonly #options: ReconnectOptions
  #started = false

  constructor(spec: ResumableSpec<T>, options: ReconnectOptions = {}) {
    this.#spec = spec
    this.#options = options
    this.lastEventId = spec.lastEventId
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<T, void, undefined> {
    if (this.#started) throw new Error('Paddock: a stream is iterated once; open another (from its lastEventId)')
    this.#started = true
    const { signal } = this.#options
    const maxRetries = this.#options.maxRetries ?? 5
    let delayMs = this.#options.retryDelayMs ?? 500
    let failures = 0
    for (;;) {
      signal?.throwIfAborted()
      const { controller, dispose } = linked(signal)
      let lastError: unknown
      try {
        let response: Response | undefined
        try {
          response = await this.#spec.open(this.lastEventId, controller.signal)
        } catch (error) {
          if (signal?.aborted || !retryableAnswer(error)) throw error
          lastError = error
        }
        if (response !== undefined) {
          if (response.body === null) throw new PaddockError(response.status, 'stream_missing', 'the answer has no body')
          try {
            for await (const message of parseSse(response.body)) {
              if (message.retry !== undefined) delayMs = message.retry
              if (message.event === 'error') {
                throw new StreamErrorEvent(errorFromEvent(message.data))
              }
              const step = this.#spec.step(message)
              if (message.id !== undefined) this.lastEventId = message.id
              failures = 0
              if (step.value !== undefined) yield step.value
              if (step.end) return
            }
            if (this.#spec.closeIsEnd) return
            lastError = new PaddockError(0, 'stream_closed', 'the server closed the stream before its end')
          } catch (error) {
            if (error instanceof StreamErrorEvent) throw error.error
            // the connection dropped (undici: TypeError "terminated"), unless we stopped it
            if (signal?.aborted) throw error
            if (error instanceof SyntaxError) throw error
            lastError = error
          }
        }
      } finally {
        controller.abort()
        dispose()
      }
      if (failures >= maxRetries) throw lastError
      failures += 1
      this.reconnects += 1
      await sleep(Math.min(delayMs * failures, 5000), signal)
    }
  }
}

/** An `error` event, carried through the read loop's own catch. */
class StreamErrorEvent {
  constructor(readonly error: PaddockError) {}
}

/** A failed open worth retrying: no answer at all, or a gateway's or a restarting server's. */
function retryableAnswer(error: unknown): boolean {
  if (error instanceof PaddockError) {
    return error.status === 502 || error.status === 503 || error.status === 504
  }
  return error instanceof TypeError // fetch's network failure
}

function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason)
      return
    }
    const onAbort = (): void => {
      clearTimeout(timer)
      reject(signal?.reason)
    }
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort)
      resolve()
    }, ms)
    signal?.addEventListener('abort', onAbort, { once: true })
  })
}

/** Parses an event's JSON data, naming the event when it is not JSON. */
export function parseData<T>(message: SseMessage): T {
  try {
    return JSON.parse(message.data) as T
  } catch (error) {
    throw new SyntaxError(`Paddock: the ${message.event} event's data is not JSON: ${message.data.slice(0, 200)}`, {
      cause: error,
    })
  }
}
