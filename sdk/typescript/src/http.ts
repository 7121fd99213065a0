// The one place requests are made: the base URL and bearer token, route
// templates filled in, query strings, JSON bodies, typed errors from error
// answers. Every route's body and answer types come from `paths`, the
// generated description of the server's OpenAPI document.

import { errorFromAnswer } from './errors.js'
import type { paths, QueryOf, RequestOf, ResponseOf } from './types.js'

export type Method = 'get' | 'put' | 'post' | 'delete' | 'patch'

export type Fetch = (input: string, init?: RequestInit) => Promise<Response>

/** A request body that is bytes: sent as given, streamed when it is a stream. */
export type BinaryBody = string | Uint8Array | ArrayBuffer | Blob | ReadableStream<Uint8Array> | AsyncIterable<Uint8Array>

export interface CallInit<P extends keyof paths, M extends Method> {
  /** Values of the route's `{name}` segments. */
  path?: Record<string, string | number | Uint8Array>
  query?: QueryOf<P, M> | Record<string, unknown>
  body?: RequestOf<P, M>
  /** A body of bytes instead of JSON, with its content type. */
  raw?: { body: BinaryBody; contentType: string }
  headers?: Record<string, string>
  signal?: AbortSignal | undefined
}

export class Http {
  readonly baseUrl: string
  readonly #token: string
  readonly #fetch: Fetch
  readonly #headers: Record<string, string>
  readonly #timeoutMs: number | undefined

  constructor(options: {
    baseUrl: string
    token: string
    fetch?: Fetch | undefined
    headers?: Record<string, string> | undefined
    timeoutMs?: number | undefined
  }) {
    if (!options.baseUrl) throw new TypeError('Paddock: baseUrl is required')
    this.baseUrl = options.baseUrl.replace(/\/+$/, '')
    this.#token = options.token
    const f = options.fetch ?? globalThis.fetch
    if (typeof f !== 'function') throw new TypeError('Paddock: no fetch (Node.js 18 or later has one)')
    this.#fetch = options.fetch ?? ((input, init) => globalThis.fetch(input, init))
    this.#headers = { ...(options.headers ?? {}) }
    this.#timeoutMs = options.timeoutMs
  }

  /** The URL of a route with its `{name}` segments and query filled in. */
  url(route: string, path: Record<string, string | number | Uint8Array> = {}, query?: object): string {
    const filled = route.replace(/\{(\w+)\}/g, (_, name: string) => {
      const value = path[name]
      if (value === undefined || value === '') throw new TypeError(`Paddock: ${route} needs ${name}`)
      return name === 'path' ? encodeFilePath(value) : encodeURIComponent(String(value))
    })
    const search = new URLSearchParams()
    for (const [key, value] of Object.entries(query ?? {})) {
      if (value === undefined || value === null) continue
      search.append(key, String(value))
    }
    const qs = search.toString()
    return `${this.baseUrl}${filled}${qs ? `?${qs}` : ''}`
  }

  /** Sends a request; an error answer becomes its typed error. */
  async send<P extends keyof paths, M extends Method>(
    method: M,
    route: P,
    init: CallInit<P, M> & { accept?: string; stream?: boolean } = {},
  ): Promise<Response> {
    const headers: Record<string, string> = {
      ...this.#headers,
      authorization: `Bearer ${this.#token}`,
      accept: init.accept ?? 'application/json',
      ...(init.headers ?? {}),
    }
    const request: RequestInit & { duplex?: 'half' } = { method: method.toUpperCase(), headers }
    if (init.raw !== undefined) {
      headers['content-type'] = init.raw.contentType
      const body = toBodyInit(init.raw.body)
      request.body = body
      if (body instanceof ReadableStream) request.duplex = 'half'
    } else if (init.body !== undefined) {
      headers['content-type'] = 'application/json'
      request.body = JSON.stringify(init.body)
    }
    const signal = init.stream ? init.signal : withTimeout(init.signal, this.#timeoutMs)
    if (signal !== undefined) request.signal = signal
    const response = await this.#fetch(this.url(route, init.path, init.query ?? undefined), request)
    if (!response.ok) {
      const text = await response.text().catch(() => '')
      throw errorFromAnswer(response.status, text, response.headers)
    }
    return response
  }

  /** A JSON route: its answer as the document types it. */
  async json<P extends keyof paths, M extends Method>(
    method: M,
    route: P,
    init: CallInit<P, M> = {},
  ): Promise<ResponseOf<P, M>> {
    const response = await this.send(method, route, init)
    return (await response.json()) as ResponseOf<P, M>
  }

  /** A route answering 204: nothing to read. */
  async empty<P extends keyof paths, M extends Method>(method: M, route: P, init: CallInit<P, M> = {}): Promise<void> {
    const response = await this.send(method, route, init)
    await response.body?.cancel().catch(() => undefined)
  }
}

/** A file path as the files routes take it: each segment percent-encoded. */
export function encodeFilePath(path: string | number | Uint8Array): string {
  if (path instanceof Uint8Array) {
    // a path in raw bytes (not UTF-8): every byte outside the unreserved set
    // percent-encoded, `/` kept as the separator (docs/api.md, "Paths not in UTF-8")
    let out = ''
    for (const byte of path) {
      const c = String.fromCharCode(byte)
      out += byte === 0x2f || /[A-Za-z0-9\-._~]/.test(c) ? c : `%${byte.toString(16).toUpperCase().padStart(2, '0')}`
    }
    return out.startsWith('/') ? `%2F${out.slice(1)}` : out
  }
  const text = String(path)
  const encoded = text.split('/').map(encodeURIComponent).join('/')
  // an absolute path keeps its leading `/` inside the first segment
  return text.startsWith('/') ? `%2F${encoded.slice(1)}` : encoded
}

function toBodyInit(body: BinaryBody): BodyInit {
  if (typeof body === 'string' || body instanceof Blob || body instanceof ArrayBuffer || body instanceof ReadableStream) {
    return body
  }
  // fetch takes any view; TypeScript's DOM types want one over an ArrayBuffer
  if (body instanceof Uint8Array) return body as Uint8Array<ArrayBuffer>
  // an async iterable of chunks: streamed
  const iterator = body[Symbol.asyncIterator]()
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      const { done, value } = await iterator.next()
      if (done) controller.close()
      else controller.enqueue(value)
    },
    async cancel(reason) {
      await iterator.return?.(reason)
    },
  })
}

function withTimeout(signal: AbortSignal | undefined, timeoutMs: number | undefined): AbortSignal | undefined {
  if (timeoutMs === undefined) return signal
  const timeout = AbortSignal.timeout(timeoutMs)
  if (signal === undefined) return timeout
  return linked(signal, timeout).controller.signal
}

/**
 * A controller aborted when any of `signals` is (AbortSignal.any is Node.js
 * 20+), and `dispose` to stop listening to them once it is no longer needed.
 */
export function linked(...signals: Array<AbortSignal | undefined>): { controller: AbortController; dispose: () => void } {
  const controller = new AbortController()
  const listeners: Array<[AbortSignal, () => void]> = []
  for (const signal of signals) {
    if (signal === undefined) continue
    if (signal.aborted) {
      controller.abort(signal.reason)
      break
    }
    const listener = (): void => controller.abort(signal.reason)
    signal.addEventListener('abort', listener, { once: true })
    listeners.push([signal, listener])
  }
  const dispose = (): void => {
    for (const [signal, listener] of listeners) signal.removeEventListener('abort', listener)
  }
  return { controller, dispose }
}

export function decodeBase64(text: string): Uint8Array {
  const binary = atob(text)
  const bytes = new Uint8Array(binary.length)
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i)
  return bytes
}

export function encodeBase64(bytes: Uint8Array): string {
  let binary = ''
  const step = 0x8000
  for (let i = 0; i < bytes.length; i += step) {
    binary += String.fromCharCode(...bytes.subarray(i, i + step))
  }
  return btoa(binary)
}
