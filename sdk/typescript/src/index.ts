// @paddock/sdk: a client for Paddock's HTTP API (`paddock serve`).
export {
  Paddock,
  Sandboxes,
  Files,
  Processes,
  Snapshots,
  Workspaces,
  Sessions,
  Runs,
  scripted,
  type PaddockOptions,
  type Page,
  type EventsOptions,
  type SessionEventsOptions,
  type ReadRange,
  type FilePath,
} from './client.js'
export {
  PaddockError,
  InvalidRequestError,
  UnauthorizedError,
  ForbiddenError,
  NotFoundError,
  ConflictError,
  RateLimitedError,
  UnavailableError,
} from './errors.js'
export { ResumableStream, type ReconnectOptions } from './streams.js'
export { parseSse, type SseMessage } from './sse.js'
export type { BinaryBody, Fetch } from './http.js'
export type * from './types.js'
