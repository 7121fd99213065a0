// Agent sessions and runs with a scripted model: a run that completes, its
// result in the workspace, steering, cancel, resume refused for a run that
// is not interrupted, a session forked at a run.
import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import {
  client,
  command,
  complete,
  ConflictError,
  FINISHED,
  InvalidRequestError,
  newSession,
  sandboxJanitor,
  sdk,
  storedEvents,
  TEST_TIMEOUT_MS,
  typedError,
} from './support.mjs'

const paddock = client()
const janitor = sandboxJanitor(paddock)
const { scripted } = sdk

/** Reads the run's events until one satisfies `found`; answers it. */
async function until(runId, found) {
  for await (const event of paddock.runs.events(runId, { transient: false })) {
    if (found(event)) return event
    if (event.kind === 'run.finished') break
  }
  throw new Error(`run ${runId} finished before the event looked for`)
}

describe('sessions and runs', { timeout: TEST_TIMEOUT_MS }, () => {
  test('a run with a scripted model completes and leaves its work in the workspace', async () => {
    const { workspace, session } = await newSession(paddock, 'completes')
    assert.equal(session.workspace, workspace.id)
    assert.equal(session.status, 'active')
    assert.deepEqual(await paddock.sessions.get(session.id), session)

    const started = await paddock.runs.start(session.id, {
      goal: 'write the greeting',
      success_criteria: ['greeting.txt says hello'],
      model: scripted([command('echo hello > greeting.txt'), complete('wrote greeting.txt')]),
    })
    assert.match(started.id, /^run_[0-9a-f]{32}$/)
    assert.equal(started.session, session.id)
    assert.equal(started.goal, 'write the greeting')
    assert.ok(['preparing', 'queued'].includes(started.state), started.state)

    const run = await paddock.runs.wait(started.id)
    assert.equal(run.state, 'completed', `${run.state}: ${run.error}`)
    assert.equal(run.end_reason, 'completed')
    // the review judges from what the run showed (a scripted claim alone may leave it unsure)
    assert.ok(['met', 'unsure'].includes(run.review?.verdict), JSON.stringify(run.review))
    assert.equal(run.usage.turns, 2)
    assert.equal(run.usage.tool_calls, 2)
    assert.ok(run.end_snapshot, 'a finished run keeps an end snapshot')

    const runs = await paddock.sessions.runs(session.id)
    assert.deepEqual(
      runs.runs.map((r) => r.id),
      [run.id],
    )
    const stored = await storedEvents(paddock, session.id)
    const kinds = stored.map((e) => e.kind)
    assert.equal(kinds[0], 'run.started')
    assert.equal(kinds.at(-1), 'run.finished')
    const call = stored.find((e) => e.kind === 'tool.call')
    assert.equal(call.payload.tool, 'run_command')
    assert.deepEqual(call.payload.arguments, { command: 'echo hello > greeting.txt' })
    assert.equal(stored.find((e) => e.kind === 'tool.result').payload.status, 'succeeded')
    assert.ok(stored.every((e) => e.run === run.id))

    // the workspace holds what the run wrote
    const reader = janitor.track(await paddock.sandboxes.create({ workspace: workspace.id, read_only: true }))
    assert.equal(await paddock.files.readText(reader.id, 'greeting.txt'), 'hello\n')
    await paddock.sandboxes.stop(reader.id)

    // resume is for interrupted runs only: this one is refused, typed
    await assert.rejects(
      paddock.runs.resume(run.id, { model: scripted([complete()]) }),
      typedError(ConflictError, 409, 'run_not_resumable'),
    )

    // a fork at the run: a new session on a copy of the workspace as the run left it
    const fork = await paddock.sessions.fork(session.id, { at_run: run.id, title: 'forked' })
    assert.notEqual(fork.id, session.id)
    assert.equal(fork.forked_from, session.id)
    assert.equal(fork.forked_at_run, run.id)
    assert.equal(fork.title, 'forked')
    assert.notEqual(fork.workspace, workspace.id)
    const forkReader = janitor.track(await paddock.sandboxes.create({ workspace: fork.workspace, read_only: true }))
    assert.equal(await paddock.files.readText(forkReader.id, 'greeting.txt'), 'hello\n')
    // its events are its own: none yet
    assert.deepEqual(await storedEvents(paddock, fork.id), [])
    const forkRun = await paddock.runs.start(fork.id, {
      goal: 'go on in the fork',
      model: scripted([command('echo again >> greeting.txt'), complete()]),
    })
    assert.equal((await paddock.runs.wait(forkRun.id)).state, 'completed')
    assert.equal(await paddock.files.readText(forkReader.id, 'greeting.txt'), 'hello\nagain\n')

    const archived = await paddock.sessions.archive(session.id)
    assert.equal(archived.status, 'archived')
    await assert.rejects(
      paddock.runs.start(session.id, { goal: 'more', model: scripted([complete()]) }),
      typedError(ConflictError, 409, 'session_archived'),
    )
  })

  test('steering: a message reaches the running run before its next turn', async () => {
    const { session } = await newSession(paddock, 'steered')
    const run = await paddock.runs.start(session.id, {
      goal: 'wait, then finish',
      model: scripted([command('sleep 3'), command('true'), complete()]),
    })
    // the first command is running: steer now
    await until(run.id, (e) => e.kind === 'tool.call')
    const message = await paddock.runs.steer(run.id, 'use the v2 API instead')
    assert.equal(message.id, 1)
    assert.equal(message.run, run.id)
    assert.equal(message.text, 'use the v2 API instead')

    const finished = await paddock.runs.wait(run.id)
    assert.equal(finished.state, 'completed', `${finished.state}: ${finished.error}`)
    const stored = await storedEvents(paddock, session.id)
    const delivered = stored.filter((e) => e.kind === 'user.message')
    assert.deepEqual(
      delivered.map((e) => e.payload),
      [{ message: 'use the v2 API instead', steering_id: 1 }],
    )
    // delivered after the first command's result, before the next model turn
    const at = (predicate) => stored.findIndex(predicate)
    const firstResult = at((e) => e.kind === 'tool.result')
    const userMessage = at((e) => e.kind === 'user.message')
    const secondTurn = stored.findIndex((e, i) => i > firstResult && e.kind === 'model.message')
    assert.ok(firstResult < userMessage && userMessage < secondTurn, JSON.stringify(stored.map((e) => e.kind)))

    // a finished run takes no more messages
    await assert.rejects(paddock.runs.steer(run.id, 'too late'), typedError(ConflictError, 409, 'run_finished'))
    await assert.rejects(paddock.runs.steer(run.id, '   '), (error) => error instanceof InvalidRequestError)
  })

  test('cancel: a running run stops, cancelled', async () => {
    const { session } = await newSession(paddock, 'cancelled')
    const run = await paddock.runs.start(session.id, {
      goal: 'wait forever',
      model: scripted([command('sleep 600'), complete()]),
    })
    await until(run.id, (e) => e.kind === 'tool.call')
    const during = await paddock.runs.get(run.id)
    assert.ok(!FINISHED.has(during.state), during.state)
    const started = Date.now()
    const cancelled = await paddock.runs.cancel(run.id)
    assert.equal(cancelled.state, 'cancelled')
    assert.equal(cancelled.end_reason, 'cancelled')
    assert.ok(Date.now() - started < 60_000)
    const finished = (await storedEvents(paddock, session.id)).at(-1)
    assert.equal(finished.kind, 'run.finished')
    assert.equal(finished.payload.state, 'cancelled')
    // cancelling again answers the run as it ended
    assert.equal((await paddock.runs.cancel(run.id)).state, 'cancelled')
  })
})
