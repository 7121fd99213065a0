// Names for the generated types (src/generated/schema.d.ts, from the server's
// OpenAPI document), and the few shapes the document leaves open.

import type { components, paths } from './generated/schema.js'

export type { components, paths, operations } from './generated/schema.js'

type Schemas = components['schemas']

export type ErrorBody = Schemas['ErrorBody']
export type HealthView = Schemas['HealthView']

export type CreateSandbox = Schemas['CreateSandbox']
export type SandboxView = Schemas['SandboxView']
export type SandboxList = Schemas['SandboxList']
export type SandboxState = Schemas['SandboxState']
export type PauseSandbox = Schemas['PauseSandbox']
export type NetworkPolicy = Schemas['NetworkPolicy']
export type ExecCommand = Schemas['ExecCommand']
export type ExecResult = Schemas['ExecResult']
export type ExitView = Schemas['ExitView']
export type ExecStarted = Schemas['ExecStarted']
export type OutputChunk = Schemas['OutputChunk']

export type StartProcess = Schemas['StartProcess']
export type ProcessView = Schemas['ProcessView']
export type ProcessList = Schemas['ProcessList']
export type ProcessOutputView = Schemas['ProcessOutputView']
export type TerminalOutput = Schemas['TerminalOutput']
export type SignalName = Schemas['SignalName']
export type Encoding = Schemas['Encoding']

export type Listing = Schemas['Listing']
export type FileEntry = Schemas['FileEntry']
export type Written = Schemas['Written']
export type SearchCommand = Schemas['SearchCommand']
export type SearchView = Schemas['SearchView']

export type CreateSnapshot = Schemas['CreateSnapshot']
export type SnapshotView = Schemas['SnapshotView']
export type SnapshotList = Schemas['SnapshotList']
export type RestoreSnapshot = Schemas['RestoreSnapshot']
export type Restored = Schemas['Restored']

export type CreateWorkspace = Schemas['CreateWorkspace']
export type WorkspaceView = Schemas['WorkspaceView']
export type WorkspaceList = Schemas['WorkspaceList']

export type CreateSession = Schemas['CreateSession']
export type UpdateSession = Schemas['UpdateSession']
export type ForkSession = Schemas['ForkSession']
export type SessionView = Schemas['SessionView']
export type SessionList = Schemas['SessionList']
export type DeleteAnswer = Schemas['DeleteAnswer']
export type CheckpointList = Schemas['CheckpointList']

export type ModelChoice = Schemas['ModelChoice']
export type StartRunCommand = Schemas['StartRunCommand']
export type ResumeRunCommand = Schemas['ResumeRunCommand']
export type RunView = Schemas['RunView']
export type RunList = Schemas['RunList']
export type RunState = Schemas['RunState']
export type ResumedView = Schemas['ResumedView']
export type SteeringView = Schemas['SteeringView']
export type ChildRuns = Schemas['ChildRuns']
export type EventEnvelope = Schemas['EventEnvelope']

/** A turn of a scripted model (the document leaves `scripted` open). */
export interface ScriptedTurn {
  text?: string
  tool_calls?: Array<{ name: string; arguments: Record<string, unknown> }>
}

/** One event of a session's or a run's stream: its SSE name and its data. */
export interface PaddockEvent extends EventEnvelope {
  /** The event's kind (`run.started`, `tool.call`, `run.finished`, ...). */
  kind: string
  /** False for a transient event (`model.delta`, `tool.output`): no id, `seq` 0, never replayed. */
  stored: boolean
}

/** One event of a streamed exec. Output is bytes (the SDK asks base64 on the wire). */
export type ExecEvent =
  | { type: 'started'; pid: number }
  | { type: 'stdout' | 'stderr'; data: Uint8Array }
  | { type: 'exit'; exit: ExitView }

/** One event of a process's output stream. */
export type ProcessEvent =
  | { type: 'output'; offset: number; data: Uint8Array; dropped: number; nextOffset: number }
  | { type: 'exit'; exit: ExitView }

// The success body of a route: what `paths` says its 2xx JSON answer is.
type Method = 'get' | 'put' | 'post' | 'delete' | 'patch'
type Success = 200 | 201 | 202
export type ResponseOf<P extends keyof paths, M extends Method> = paths[P][M] extends {
  responses: infer R
}
  ? {
      [K in keyof R & Success]: R[K] extends { content: { 'application/json': infer T } } ? T : never
    }[keyof R & Success]
  : never
export type RequestOf<P extends keyof paths, M extends Method> = paths[P][M] extends {
  requestBody?: { content: { 'application/json': infer T } }
}
  ? T
  : never
export type QueryOf<P extends keyof paths, M extends Method> = paths[P][M] extends {
  parameters: { query?: infer Q }
}
  ? NonNullable<Q>
  : never
