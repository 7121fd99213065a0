// The client: `new Paddock({ baseUrl, token })` and one object per area of
// the API. Bodies and answers are the generated types; what generation
// cannot give is written here: the event streams (resumed after a dropped
// connection), a process's output stream, a streamed exec, file bytes and
// archive upload and download.

import { errorFromEvent, PaddockError } from './errors.js'
import { decodeBase64, encodeBase64, Http, type BinaryBody, type Fetch } from './http.js'
import { parseSse } from './sse.js'
import { parseData, ResumableStream, type ReconnectOptions } from './streams.js'
import type {
  ChildRuns,
  CheckpointList,
  CreateSandbox,
  CreateSession,
  CreateSnapshot,
  CreateWorkspace,
  DeleteAnswer,
  EventEnvelope,
  ExecCommand,
  ExecEvent,
  ExecResult,
  ExitView,
  ForkSession,
  HealthView,
  Listing,
  ModelChoice,
  PaddockEvent,
  PauseSandbox,
  ProcessEvent,
  ProcessList,
  ProcessOutputView,
  ProcessView,
  RestoreSnapshot,
  ResumedView,
  ResumeRunCommand,
  RunList,
  RunView,
  SandboxList,
  SandboxState,
  SandboxView,
  ScriptedTurn,
  SearchCommand,
  SearchView,
  SessionList,
  SessionView,
  SignalName,
  SnapshotList,
  SnapshotView,
  StartProcess,
  StartRunCommand,
  SteeringView,
  TerminalOutput,
  UpdateSession,
  WorkspaceList,
  WorkspaceView,
  Written,
} from './types.js'

export interface PaddockOptions {
  /** The server, e.g. `http://127.0.0.1:7878` (without `/v1`). */
  baseUrl: string
  /** A tenant's bearer token. */
  token: string
  /** Another fetch (a test's, or one with a proxy agent); default: the global one. */
  fetch?: Fetch
  /** Headers added to every request. */
  headers?: Record<string, string>
  /** Abort requests that take longer (never the streams); default: no limit. */
  timeoutMs?: number
}

/** A page of a list: `after` the last id of the previous page, `limit` 1 to 1000. */
export interface Page {
  after?: string
  limit?: number
}

/** Options of a session's or a run's event stream. */
export interface EventsOptions extends ReconnectOptions {
  /** Only events after this sequence number (default 0: from the first). */
  after?: number
  /** Yield transient events (`model.delta`, `tool.output`; no id, seq 0) too (default true). */
  transient?: boolean
}

/** Options of a session's event stream. */
export interface SessionEventsOptions extends EventsOptions {
  /**
   * `run_finished`: end after the next `run.finished`; `caught_up`: end once
   * the events stored so far were sent; default: follow the session until
   * the iteration is stopped (`break`, or `signal`).
   */
  until?: 'run_finished' | 'caught_up'
}

/** A model that replays `turns` (the scripted provider's format): for tests and demos. */
export function scripted(turns: ScriptedTurn[]): ModelChoice {
  return { scripted: { turns } }
}

export class Paddock {
  readonly http: Http
  readonly sandboxes: Sandboxes
  readonly files: Files
  readonly processes: Processes
  readonly snapshots: Snapshots
  readonly workspaces: Workspaces
  readonly sessions: Sessions
  readonly runs: Runs

  constructor(options: PaddockOptions) {
    this.http = new Http(options)
    this.sandboxes = new Sandboxes(this.http)
    this.files = new Files(this.http)
    this.processes = new Processes(this.http)
    this.snapshots = new Snapshots(this.http)
    this.workspaces = new Workspaces(this.http)
    this.runs = new Runs(this.http)
    this.sessions = new Sessions(this.http, this.runs)
  }

  /** `GET /v1/health`. A degraded server answers 503, thrown as an UnavailableError. */
  health(): Promise<HealthView> {
    return this.http.json('get', '/v1/health')
  }

  /** The server's OpenAPI document (`GET /v1/openapi.json`). */
  openapi(): Promise<Record<string, unknown>> {
    return this.http.json('get', '/v1/openapi.json') as Promise<Record<string, unknown>>
  }

  /** A session's events, live, resumed after a dropped connection: `for await (const e of paddock.events(id))`. */
  events(sessionId: string, options: SessionEventsOptions = {}): ResumableStream<PaddockEvent> {
    return this.sessions.events(sessionId, options)
  }
}

export class Sandboxes {
  constructor(private readonly http: Http) {}

  /** `POST /v1/sandboxes`: every field optional. */
  create(request: CreateSandbox = {}): Promise<SandboxView> {
    return this.http.json('post', '/v1/sandboxes', { body: request })
  }

  get(id: string): Promise<SandboxView> {
    return this.http.json('get', '/v1/sandboxes/{id}', { path: { id } })
  }

  list(query: Page & { state?: SandboxState } = {}): Promise<SandboxList> {
    return this.http.json('get', '/v1/sandboxes', { query })
  }

  /** `DELETE /v1/sandboxes/{id}`: destroys it; answers its record, `stopped`. */
  stop(id: string): Promise<SandboxView> {
    return this.http.json('delete', '/v1/sandboxes/{id}', { path: { id } })
  }

  pause(id: string, request: PauseSandbox = {}): Promise<SandboxView> {
    return this.http.json('post', '/v1/sandboxes/{id}/pause', { path: { id }, body: request })
  }

  resume(id: string): Promise<SandboxView> {
    return this.http.json('post', '/v1/sandboxes/{id}/resume', { path: { id } })
  }

  /** Runs a command and answers when it ended, with its output (at most `output_cap`). */
  exec(id: string, command: ExecCommand): Promise<ExecResult> {
    return this.http.json('post', '/v1/sandboxes/{id}/exec', { path: { id }, body: command })
  }

  /**
   * Runs a command, its output streamed as it comes: `started`, `stdout` and
   * `stderr` chunks (bytes), then `exit`. Stopping the iteration (or `signal`)
   * closes the stream, which kills the command.
   */
  async *execStream(id: string, command: ExecCommand, options: { signal?: AbortSignal } = {}): AsyncGenerator<ExecEvent> {
    const controller = new AbortController()
    const onAbort = (): void => controller.abort(options.signal?.reason)
    options.signal?.addEventListener('abort', onAbort, { once: true })
    try {
      const response = await this.http.send('post', '/v1/sandboxes/{id}/exec', {
        path: { id },
        body: { ...command, output_encoding: 'base64' },
        accept: 'text/event-stream',
        stream: true,
        signal: controller.signal,
      })
      if (response.body === null) throw new PaddockError(response.status, 'stream_missing', 'the answer has no body')
      for await (const message of parseSse(response.body)) {
        switch (message.event) {
          case 'started':
            yield { type: 'started', pid: parseData<{ pid: number }>(message).pid }
            break
          case 'stdout':
          case 'stderr':
            yield { type: message.event, data: decodeBase64(parseData<{ data: string }>(message).data) }
            break
          case 'exit':
            yield { type: 'exit', exit: parseData<ExitView>(message) }
            return
          case 'error':
            throw errorFromEvent(message.data)
          default:
            break
        }
      }
      throw new PaddockError(0, 'stream_closed', 'the exec stream ended before its exit event')
    } finally {
      options.signal?.removeEventListener('abort', onAbort)
      controller.abort()
    }
  }
}

export interface ReadRange {
  offset?: number
  len?: number
}

/** A file's path: text, or raw bytes for a name that is not UTF-8. Relative to /workspace. */
export type FilePath = string | Uint8Array

export class Files {
  constructor(private readonly http: Http) {}

  /** A file's bytes (or the range `offset`, `len`). */
  async read(sandboxId: string, path: FilePath, range: ReadRange = {}): Promise<Uint8Array> {
    const response = await this.http.send('get', '/v1/sandboxes/{id}/files/{path}', {
      path: { id: sandboxId, path },
      query: range,
      accept: 'application/octet-stream',
    })
    return new Uint8Array(await response.arrayBuffer())
  }

  /** A file's bytes as UTF-8 text. */
  async readText(sandboxId: string, path: FilePath, range: ReadRange = {}): Promise<string> {
    return new TextDecoder().decode(await this.read(sandboxId, path, range))
  }

  /** A file's bytes as a stream, for large files. */
  async readStream(sandboxId: string, path: FilePath, range: ReadRange = {}): Promise<ReadableStream<Uint8Array>> {
    const response = await this.http.send('get', '/v1/sandboxes/{id}/files/{path}', {
      path: { id: sandboxId, path },
      query: range,
      accept: 'application/octet-stream',
      stream: true,
    })
    if (response.body === null) return new ReadableStream({ start: (c) => c.close() })
    return response.body
  }

  /** Replaces or creates a file atomically (parents made unless `parents: false`); text is written as UTF-8. */
  write(
    sandboxId: string,
    path: FilePath,
    data: BinaryBody,
    options: { mode?: string | number; parents?: boolean } = {},
  ): Promise<Written> {
    const mode = typeof options.mode === 'number' ? options.mode.toString(8) : options.mode
    return this.http.json('put', '/v1/sandboxes/{id}/files/{path}', {
      path: { id: sandboxId, path },
      query: { mode, parents: options.parents },
      raw: { body: data, contentType: 'application/octet-stream' },
    })
  }

  /** A directory's entries (default: the workspace). */
  list(sandboxId: string, dir?: string): Promise<Listing> {
    return this.http.json('get', '/v1/sandboxes/{id}/files', { path: { id: sandboxId }, query: { dir } })
  }

  remove(sandboxId: string, path: FilePath, options: { recursive?: boolean } = {}): Promise<void> {
    return this.http.empty('delete', '/v1/sandboxes/{id}/files/{path}', {
      path: { id: sandboxId, path },
      query: { recursive: options.recursive },
    })
  }

  search(sandboxId: string, request: SearchCommand): Promise<SearchView> {
    return this.http.json('post', '/v1/sandboxes/{id}/search', { path: { id: sandboxId }, body: request })
  }
}

export class Processes {
  constructor(private readonly http: Http) {}

  /** Starts a background process (its stdin stays open); answers its `handle`. */
  start(sandboxId: string, request: StartProcess): Promise<ProcessView> {
    return this.http.json('post', '/v1/sandboxes/{id}/processes', { path: { id: sandboxId }, body: request })
  }

  list(sandboxId: string): Promise<ProcessList> {
    return this.http.json('get', '/v1/sandboxes/{id}/processes', { path: { id: sandboxId } })
  }

  /** Reads captured output from `offset` (ask again from `next_offset`). */
  output(
    sandboxId: string,
    handle: number,
    query: { offset?: number; max_bytes?: number; encoding?: 'text' | 'base64' } = {},
  ): Promise<ProcessOutputView> {
    return this.http.json('get', '/v1/sandboxes/{id}/processes/{handle}/output', {
      path: { id: sandboxId, handle },
      query,
    })
  }

  /** Writes to the process's stdin; `eof` closes it after. */
  stdin(sandboxId: string, handle: number, data: string | Uint8Array, options: { eof?: boolean } = {}): Promise<void> {
    const body = typeof data === 'string' ? { data } : { data_base64: encodeBase64(data) }
    return this.http.empty('post', '/v1/sandboxes/{id}/processes/{handle}/stdin', {
      path: { id: sandboxId, handle },
      body: { ...body, eof: options.eof ?? false },
    })
  }

  signal(sandboxId: string, handle: number, signal: SignalName = 'TERM'): Promise<void> {
    return this.http.empty('post', '/v1/sandboxes/{id}/processes/{handle}/signal', {
      path: { id: sandboxId, handle },
      body: { signal },
    })
  }

  resize(sandboxId: string, handle: number, rows: number, cols: number): Promise<void> {
    return this.http.empty('post', '/v1/sandboxes/{id}/processes/{handle}/resize', {
      path: { id: sandboxId, handle },
      body: { rows, cols },
    })
  }

  /**
   * The process's output as it comes (`output` chunks, then `exit`), from
   * byte `offset` (default 0: the scrollback the sandbox still keeps),
   * resumed at the last offset after a dropped connection.
   */
  stream(
    sandboxId: string,
    handle: number,
    options: ReconnectOptions & { offset?: number } = {},
  ): ResumableStream<ProcessEvent> {
    const { offset, ...reconnect } = options
    return new ResumableStream<ProcessEvent>(
      {
        open: (lastEventId, signal) =>
          this.http.send('get', '/v1/sandboxes/{id}/processes/{handle}/stream', {
            path: { id: sandboxId, handle },
            query: { offset },
            headers: lastEventId === undefined ? {} : { 'last-event-id': lastEventId },
            accept: 'text/event-stream',
            stream: true,
            signal,
          }),
        step: (message) => {
          if (message.event === 'output') {
            const chunk = parseData<TerminalOutput>(message)
            const data = decodeBase64(chunk.data_base64)
            return {
              value: {
                type: 'output',
                offset: chunk.offset,
                data,
                dropped: chunk.dropped,
                nextOffset: chunk.offset + data.length,
              },
            }
          }
          if (message.event === 'exit') return { value: { type: 'exit', exit: parseData<ExitView>(message) }, end: true }
          return {}
        },
        closeIsEnd: false,
      },
      reconnect,
    )
  }
}

export class Snapshots {
  constructor(private readonly http: Http) {}

  /** Packs the sandbox's /workspace into a snapshot (`excludes` add to the defaults). */
  create(sandboxId: string, request: CreateSnapshot = {}): Promise<SnapshotView> {
    return this.http.json('post', '/v1/sandboxes/{id}/snapshots', { path: { id: sandboxId }, body: request })
  }

  get(id: string): Promise<SnapshotView> {
    return this.http.json('get', '/v1/snapshots/{id}', { path: { id } })
  }

  list(query: Page = {}): Promise<SnapshotList> {
    return this.http.json('get', '/v1/snapshots', { query })
  }

  delete(id: string): Promise<SnapshotView> {
    return this.http.json('delete', '/v1/snapshots/{id}', { path: { id } })
  }

  /** New sandboxes (`count`, default 1) each on its own copy of the snapshot's files. */
  async restore(id: string, request: RestoreSnapshot = {}): Promise<SandboxView[]> {
    const restored = await this.http.json('post', '/v1/snapshots/{id}/restore', { path: { id }, body: request })
    return restored.sandboxes
  }

  /** `count` sandboxes (2 to 16) from one snapshot, made concurrently: all or none. */
  fork(id: string, count: number, request: Omit<RestoreSnapshot, 'count'> = {}): Promise<SandboxView[]> {
    return this.restore(id, { ...request, count })
  }

  /** The snapshot's archive (tar + zstd) as a stream. */
  async download(id: string, options: { signal?: AbortSignal } = {}): Promise<ReadableStream<Uint8Array>> {
    const response = await this.http.send('get', '/v1/snapshots/{id}/archive', {
      path: { id },
      accept: 'application/zstd',
      stream: true,
      signal: options.signal,
    })
    return bodyOf(response)
  }

  /** The snapshot's archive (tar + zstd) as bytes. */
  async downloadBytes(id: string): Promise<Uint8Array> {
    return readAll(await this.download(id))
  }

  /** A snapshot from an archive (tar + zstd, at most 1 GiB), streamed up; checked as a restore checks it. */
  upload(archive: BinaryBody, limits: { max_files?: number; max_bytes?: number } = {}): Promise<SnapshotView> {
    return this.http.json('post', '/v1/snapshots', {
      query: limits,
      raw: { body: archive, contentType: 'application/zstd' },
    })
  }
}

export class Workspaces {
  constructor(private readonly http: Http) {}

  create(request: CreateWorkspace): Promise<WorkspaceView> {
    return this.http.json('post', '/v1/workspaces', { body: request })
  }

  get(id: string): Promise<WorkspaceView> {
    return this.http.json('get', '/v1/workspaces/{id}', { path: { id } })
  }

  list(query: Page = {}): Promise<WorkspaceList> {
    return this.http.json('get', '/v1/workspaces', { query })
  }

  delete(id: string): Promise<WorkspaceView> {
    return this.http.json('delete', '/v1/workspaces/{id}', { path: { id } })
  }

  /** A new workspace holding an archive's files (tar + zstd, at most 1 GiB), streamed up. */
  upload(
    archive: BinaryBody,
    options: { name?: string; max_files?: number; max_bytes?: number } = {},
  ): Promise<WorkspaceView> {
    return this.http.json('post', '/v1/workspaces/import', {
      query: options,
      raw: { body: archive, contentType: 'application/zstd' },
    })
  }

  /** The workspace's files packed as a snapshot packs them (tar + zstd), as a stream. */
  async download(
    id: string,
    options: { max_files?: number; max_bytes?: number; signal?: AbortSignal } = {},
  ): Promise<ReadableStream<Uint8Array>> {
    const { signal, ...query } = options
    const response = await this.http.send('get', '/v1/workspaces/{id}/archive', {
      path: { id },
      query,
      accept: 'application/zstd',
      stream: true,
      signal,
    })
    return bodyOf(response)
  }

  async downloadBytes(id: string, options: { max_files?: number; max_bytes?: number } = {}): Promise<Uint8Array> {
    return readAll(await this.download(id, options))
  }
}

export class Sessions {
  constructor(
    private readonly http: Http,
    private readonly runsApi: Runs,
  ) {}

  /** `POST /v1/sessions`: an agent session in a workspace. */
  create(request: CreateSession): Promise<SessionView> {
    return this.http.json('post', '/v1/sessions', { body: request })
  }

  get(id: string): Promise<SessionView> {
    return this.http.json('get', '/v1/sessions/{id}', { path: { id } })
  }

  list(query: Page & { workspace?: string } = {}): Promise<SessionList> {
    return this.http.json('get', '/v1/sessions', { query })
  }

  update(id: string, request: UpdateSession): Promise<SessionView> {
    return this.http.json('patch', '/v1/sessions/{id}', { path: { id }, body: request })
  }

  /** Archives the session (it takes no new run; its history stays readable). */
  archive(id: string): Promise<DeleteAnswer> {
    return this.http.json('delete', '/v1/sessions/{id}', { path: { id } })
  }

  /** Deletes the session for good, with its subagents' sessions; `force` cancels its runs first. */
  purge(id: string, options: { force?: boolean } = {}): Promise<DeleteAnswer> {
    return this.http.json('delete', '/v1/sessions/{id}', {
      path: { id },
      query: { purge: true, force: options.force },
    })
  }

  /** A new session sharing this one's history, on a copy of its workspace (now, or as `at_run` left it). */
  fork(id: string, request: ForkSession = {}): Promise<SessionView> {
    return this.http.json('post', '/v1/sessions/{id}/fork', { path: { id }, body: request })
  }

  runs(id: string): Promise<RunList> {
    return this.http.json('get', '/v1/sessions/{id}/runs', { path: { id } })
  }

  checkpoints(id: string): Promise<CheckpointList> {
    return this.http.json('get', '/v1/sessions/{id}/checkpoints', { path: { id } })
  }

  /** Starts a run in the session (the same as `paddock.runs.start`). */
  startRun(id: string, request: StartRunCommand): Promise<RunView> {
    return this.runsApi.start(id, request)
  }

  /**
   * The session's events from `after` on, then live; resumed after a
   * dropped connection from the last id received (`Last-Event-ID`), so every
   * stored event comes exactly once, in order.
   */
  events(id: string, options: SessionEventsOptions = {}): ResumableStream<PaddockEvent> {
    const { after, until, transient, ...reconnect } = options
    return eventStream(
      (lastEventId, signal) =>
        this.http.send('get', '/v1/sessions/{id}/events', {
          path: { id },
          query: { after, until },
          headers: lastEventId === undefined ? {} : { 'last-event-id': lastEventId },
          accept: 'text/event-stream',
          stream: true,
          signal,
        }),
      { endAtRunFinished: until === 'run_finished', closeIsEnd: until === 'caught_up', transient },
      reconnect,
    )
  }
}

export class Runs {
  constructor(private readonly http: Http) {}

  /** `POST /v1/sessions/{id}/runs`: a run toward `goal` with `model` (`{spec}` or {@link scripted}). */
  start(sessionId: string, request: StartRunCommand): Promise<RunView> {
    return this.http.json('post', '/v1/sessions/{id}/runs', { path: { id: sessionId }, body: request })
  }

  get(id: string): Promise<RunView> {
    return this.http.json('get', '/v1/runs/{id}', { path: { id } })
  }

  /** Cancels the run; answers it once it stopped (a finished run as it ended). */
  cancel(id: string): Promise<RunView> {
    return this.http.json('post', '/v1/runs/{id}/cancel', { path: { id } })
  }

  /** A steering message for the run's next model turn. */
  steer(id: string, text: string): Promise<SteeringView> {
    return this.http.json('post', '/v1/runs/{id}/messages', { path: { id }, body: { text } })
  }

  /** Continues an `interrupted` run in a new run (answered): its goal and workspace, the model chosen again. */
  resume(id: string, request: ResumeRunCommand): Promise<ResumedView> {
    return this.http.json('post', '/v1/runs/{id}/resume', { path: { id }, body: request })
  }

  children(id: string): Promise<ChildRuns> {
    return this.http.json('get', '/v1/runs/{id}/children', { path: { id } })
  }

  /**
   * The run's events (ending after its `run.finished`), resumed after a
   * dropped connection from the last id received.
   */
  events(id: string, options: EventsOptions = {}): ResumableStream<PaddockEvent> {
    const { after, transient, ...reconnect } = options
    return eventStream(
      (lastEventId, signal) =>
        this.http.send('get', '/v1/runs/{id}/events', {
          path: { id },
          query: { after },
          headers: lastEventId === undefined ? {} : { 'last-event-id': lastEventId },
          accept: 'text/event-stream',
          stream: true,
          signal,
        }),
      { endAtRunFinished: true, closeIsEnd: false, transient },
      reconnect,
    )
  }

  /** Follows the run's events until it finished, then answers the run. */
  async wait(id: string, options: ReconnectOptions = {}): Promise<RunView> {
    for await (const event of this.events(id, { ...options, transient: false })) {
      void event
    }
    return this.get(id)
  }
}

function eventStream(
  open: (lastEventId: string | undefined, signal: AbortSignal) => Promise<Response>,
  how: { endAtRunFinished: boolean; closeIsEnd: boolean; transient: boolean | undefined },
  reconnect: ReconnectOptions,
): ResumableStream<PaddockEvent> {
  const withTransient = how.transient ?? true
  return new ResumableStream<PaddockEvent>(
    {
      open,
      step: (message) => {
        const envelope = parseData<EventEnvelope>(message)
        const event: PaddockEvent = { ...envelope, kind: message.event, stored: message.id !== undefined }
        const end = how.endAtRunFinished && event.kind === 'run.finished'
        if (!event.stored && !withTransient) return { end }
        return { value: event, end }
      },
      closeIsEnd: how.closeIsEnd,
    },
    reconnect,
  )
}

function bodyOf(response: Response): ReadableStream<Uint8Array> {
  return response.body ?? new ReadableStream({ start: (c) => c.close() })
}

async function readAll(stream: ReadableStream<Uint8Array>): Promise<Uint8Array> {
  const chunks: Uint8Array[] = []
  let length = 0
  const reader = stream.getReader()
  for (;;) {
    const { done, value } = await reader.read()
    if (done) break
    chunks.push(value)
    length += value.length
  }
  const out = new Uint8Array(length)
  let at = 0
  for (const chunk of chunks) {
    out.set(chunk, at)
    at += chunk.length
  }
  return out
}
