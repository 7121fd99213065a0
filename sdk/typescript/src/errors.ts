// Typed errors from the API's one error body, `{"error": {"code", "message"}}`
// (docs/api.md, "Errors"). The class follows the HTTP status; `code` is the
// stable, machine-readable reason (`sandbox_not_found`, `session_busy`, ...).

import type { ErrorBody } from './types.js'

/** An error answer of the API, or an `error` event that ended a stream. */
export class PaddockError extends Error {
  /** The HTTP status; 0 when the error came as an `error` event inside a stream. */
  readonly status: number
  /** The API's stable code, for programs (`sandbox_not_found`, ...). */
  readonly code: string
  /** The body as the server sent it, when it was the API's error shape. */
  readonly body: ErrorBody | undefined
  /** `Retry-After` in seconds, when the answer carried one. */
  readonly retryAfter: number | undefined

  constructor(
    status: number,
    code: string,
    message: string,
    options: { body?: ErrorBody; retryAfter?: number; cause?: unknown } = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause })
    this.name = new.target.name
    this.status = status
    this.code = code
    this.body = options.body
    this.retryAfter = options.retryAfter
  }
}

/** 400 or 422: a field, query parameter, id, path or body the server refused. */
export class InvalidRequestError extends PaddockError {}
/** 401: no valid bearer token. */
export class UnauthorizedError extends PaddockError {}
/** 403: refused for this tenant or sandbox (`read_only`, `network_not_allowed`, ...). */
export class ForbiddenError extends PaddockError {}
/** 404: no such object for this tenant (`sandbox_not_found`, `run_not_found`, ...). */
export class NotFoundError extends PaddockError {}
/** 409: the object's state refuses the request (`session_busy`, `run_not_resumable`, ...). */
export class ConflictError extends PaddockError {}
/** 429: a quota, budget or stream cap (`too_many_sandboxes`, `quota_exceeded`, ...). */
export class RateLimitedError extends PaddockError {}
/** 503: the server cannot serve it now (`shutting_down`, `busy`, `agents_unavailable`, ...). */
export class UnavailableError extends PaddockError {}

/** The error for an error answer's status. */
export function errorClassFor(status: number): typeof PaddockError {
  switch (status) {
    case 400:
    case 422:
      return InvalidRequestError
    case 401:
      return UnauthorizedError
    case 403:
      return ForbiddenError
    case 404:
      return NotFoundError
    case 409:
      return ConflictError
    case 429:
      return RateLimitedError
    case 503:
      return UnavailableError
    default:
      return PaddockError
  }
}

/** Whether a parsed body is the API's error shape. */
export function isErrorBody(value: unknown): value is ErrorBody {
  if (typeof value !== 'object' || value === null) return false
  const error = (value as { error?: unknown }).error
  return (
    typeof error === 'object' &&
    error !== null &&
    typeof (error as { code?: unknown }).code === 'string' &&
    typeof (error as { message?: unknown }).message === 'string'
  )
}

/** The typed error of an error answer, from its status and body text. */
export function errorFromAnswer(status: number, text: string, headers?: Headers): PaddockError {
  const retryAfterHeader = headers?.get('retry-after')
  const retryAfter =
    retryAfterHeader != null && /^\d+$/.test(retryAfterHeader.trim()) ? Number(retryAfterHeader) : undefined
  let parsed: unknown
  try {
    parsed = JSON.parse(text)
  } catch {
    parsed = undefined
  }
  const Class = errorClassFor(status)
  if (isErrorBody(parsed)) {
    return new Class(status, parsed.error.code, parsed.error.message, {
      body: parsed,
      ...(retryAfter === undefined ? {} : { retryAfter }),
    })
  }
  // Not the API's shape (a proxy's page, an empty body): keep what there is.
  const snippet = text.length > 500 ? `${text.slice(0, 500)}...` : text
  return new Class(status, `http_${status}`, snippet || `HTTP ${status}`, retryAfter === undefined ? {} : { retryAfter })
}

/** The error an `error` event of a stream carries (status 0). */
export function errorFromEvent(data: string): PaddockError {
  let parsed: unknown
  try {
    parsed = JSON.parse(data)
  } catch {
    parsed = undefined
  }
  if (isErrorBody(parsed)) {
    return new PaddockError(0, parsed.error.code, parsed.error.message, { body: parsed })
  }
  return new PaddockError(0, 'stream_error', data)
}
