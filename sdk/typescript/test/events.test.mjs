// Event streams: read live while a run goes on, and resumed after a dropped
// connection from the last id received, so no event is lost or repeated.
import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import {
  assertWholeSequence,
  client,
  collect,
  command,
  complete,
  droppingProxy,
  FINISHED,
  newSession,
  NotFoundError,
  sdk,
  storedEvents,
  TEST_TIMEOUT_MS,
  typedError,
} from './support.mjs'

const paddock = client()
const { scripted } = sdk

/** A run that takes a few seconds: three commands with pauses, then done. */
function slowModel() {
  return scripted([command('sleep 1; echo one'), command('sleep 1; echo two'), command('echo three'), complete()])
}

describe('events', { timeout: TEST_TIMEOUT_MS }, () => {
  test('live: events arrive while the run goes on, transient ones without an id', async () => {
    const { session } = await newSession(paddock, 'live')
    const run = await paddock.runs.start(session.id, { goal: 'count slowly', model: slowModel() })
    const events = []
    let stateAtFirst
    for await (const event of paddock.events(session.id, { until: 'run_finished' })) {
      if (events.length === 0) stateAtFirst = (await paddock.runs.get(run.id)).state
      events.push(event)
    }
    // the first event came while the run was still going: read live, not after the fact
    assert.ok(!FINISHED.has(stateAtFirst), `the run was ${stateAtFirst} at the first event`)
    assert.equal(events.at(-1).kind, 'run.finished')
    assert.equal(events.at(-1).payload.state, 'completed')
    const stored = await storedEvents(paddock, session.id)
    assertWholeSequence(events, stored)
    // what the live stream carried is what was stored
    assert.deepEqual(
      events.filter((e) => e.stored),
      stored,
    )
    // transient events came too: no id, seq 0
    const transient = events.filter((e) => !e.stored)
    assert.ok(transient.length > 0, 'model.delta or tool.output events')
    assert.ok(transient.every((e) => e.seq === 0 && ['model.delta', 'tool.output'].includes(e.kind)))
  })

  test('resumed by hand: stop mid-stream, reopen after the last id', async () => {
    const { session } = await newSession(paddock, 'by-hand')
    const run = await paddock.runs.start(session.id, { goal: 'count slowly', model: slowModel() })
    const first = paddock.runs.events(run.id, { transient: false })
    const before = []
    for await (const event of first) {
      before.push(event)
      if (before.length === 4) break // the connection is closed here
    }
    assert.equal(first.lastEventId, String(before.at(-1).seq))
    const during = await paddock.runs.get(run.id)
    assert.ok(!FINISHED.has(during.state), `stopped while the run was going (${during.state})`)

    const rest = await collect(paddock.runs.events(run.id, { after: Number(first.lastEventId), transient: false }))
    assert.equal(rest.at(-1).kind, 'run.finished')
    assertWholeSequence([...before, ...rest], await storedEvents(paddock, session.id))
  })

  test('resumed by the SDK: a connection dropped mid-stream reconnects with Last-Event-ID', async () => {
    const { session } = await newSession(paddock, 'dropped')
    const proxy = await droppingProxy(5)
    try {
      const viaProxy = new sdk.Paddock({ baseUrl: proxy.url, token: process.env.PADDOCK_TOKEN })
      const run = await paddock.runs.start(session.id, { goal: 'count slowly', model: slowModel() })
      const stream = viaProxy.events(session.id, { until: 'run_finished', retryDelayMs: 100 })
      const events = await collect(stream)

      assert.equal(proxy.state.drops, 1, 'the proxy cut one stream')
      assert.equal(stream.reconnects, 1)
      assert.equal(proxy.state.eventRequests.length, 2, JSON.stringify(proxy.state.eventRequests))
      const [opened, resumed] = proxy.state.eventRequests
      assert.equal(opened.lastEventId, undefined)
      // the reconnection asked for what followed the 5th event, the last one received
      assert.equal(resumed.lastEventId, '5')
      assert.equal(events.filter((e) => e.stored)[4].seq, 5)

      assert.equal(events.at(-1).kind, 'run.finished')
      assert.equal(stream.lastEventId, String(events.at(-1).seq))
      assert.equal((await paddock.runs.get(run.id)).state, 'completed')
      assertWholeSequence(events, await storedEvents(paddock, session.id))
    } finally {
      await proxy.close()
    }
  })

  test('a stream of an unknown session fails at once, typed', async () => {
    const missing = `ses_${'0'.repeat(32)}`
    await assert.rejects(collect(paddock.events(missing)), typedError(NotFoundError, 404, 'session_not_found'))
  })
})
