// A program using the packed SDK the way a user's TypeScript would, type-checked
// (never run) by scripts/sdk-typescript-setup.sh against the installed
// tarball: the package's types resolve, and the generated types reach a user.
import {
  ConflictError,
  NotFoundError,
  Paddock,
  PaddockError,
  scripted,
  type ExecResult,
  type PaddockEvent,
  type RunView,
  type SandboxView,
  type components,
  type paths,
} from '@paddock/sdk'

export async function readme(): Promise<void> {
  // the README's example
  const paddock = new Paddock({ baseUrl: 'http://127.0.0.1:7878', token: process_env('PADDOCK_TOKEN') })
  const sandbox = await paddock.sandboxes.create()
  const result = await paddock.sandboxes.exec(sandbox.id, { shell: 'echo hello' })
  console.log(result.stdout)
  await paddock.sandboxes.stop(sandbox.id)
}

export async function typed(paddock: Paddock): Promise<void> {
  const sandbox: SandboxView = await paddock.sandboxes.create({ limits: { memory_bytes: 512 << 20 } })
  const state: 'running' | 'stopped' | 'lost' | 'paused' = sandbox.state
  const result: ExecResult = await paddock.sandboxes.exec(sandbox.id, { argv: ['true'] })
  const code: number | null | undefined = result.exit_code
  const bytes: Uint8Array = await paddock.files.read(sandbox.id, 'a.txt')
  for await (const event of paddock.sandboxes.execStream(sandbox.id, { shell: 'ls' })) {
    if (event.type === 'stdout') {
      const chunk: Uint8Array = event.data
      void chunk
    }
  }
  const { workspace } = await paddock.sessions.get('ses_0')
  const session = await paddock.sessions.create({ workspace })
  const run: RunView = await paddock.runs.start(session.id, {
    goal: 'make the tests pass',
    model: scripted([{ text: 'done', tool_calls: [{ name: 'complete_task', arguments: { verdict: 'met' } }] }]),
  })
  const events = paddock.events(session.id, { until: 'run_finished' })
  for await (const event of events) {
    const e: PaddockEvent = event
    const seq: number = e.seq
    void seq
  }
  const resumeFrom: string | undefined = events.lastEventId
  try {
    await paddock.runs.resume(run.id, { model: { spec: 'openai:gpt-4o' } })
  } catch (error) {
    if (error instanceof ConflictError || error instanceof NotFoundError) {
      const { status, code }: { status: number; code: string } = error
      void status
      void code
    } else if (error instanceof PaddockError) {
      throw error
    }
  }
  // the generated types themselves
  type Health = paths['/v1/health']['get']['responses'][200]['content']['application/json']
  const health: Health = await paddock.health()
  const view: components['schemas']['SnapshotView'] = await paddock.snapshots.create(sandbox.id)
  // @ts-expect-error: the document says what a sandbox request takes
  await paddock.sandboxes.create({ no_such_field: true })
  void [state, code, bytes, resumeFrom, health, view]
}

declare function process_env(name: string): string
