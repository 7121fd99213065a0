// Sandboxes: create, get, list, exec (answered and streamed), files round
// trip, background processes with their output stream, stop.
import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import {
  client,
  collect,
  ConflictError,
  droppingProxy,
  NotFoundError,
  sandboxJanitor,
  sdk,
  text,
  TEST_TIMEOUT_MS,
  typedError,
} from './support.mjs'

const paddock = client()
const janitor = sandboxJanitor(paddock)

describe('sandboxes', { timeout: TEST_TIMEOUT_MS }, () => {
  test('create, get, list, exec, stop', async () => {
    const sandbox = janitor.track(await paddock.sandboxes.create({ metadata: { suite: 'sdk-typescript' } }))
    assert.match(sandbox.id, /^sb-[0-9a-f]{32}$/)
    assert.equal(sandbox.state, 'running')
    assert.deepEqual(sandbox.metadata, { suite: 'sdk-typescript' })

    const got = await paddock.sandboxes.get(sandbox.id)
    assert.equal(got.id, sandbox.id)
    assert.equal(got.state, 'running')

    const listed = await paddock.sandboxes.list({ state: 'running', limit: 1000 })
    assert.ok(
      listed.sandboxes.some((s) => s.id === sandbox.id),
      `${sandbox.id} among the running: ${listed.sandboxes.map((s) => s.id)}`,
    )

    const result = await paddock.sandboxes.exec(sandbox.id, {
      shell: 'echo "out $GREETING"; echo err >&2; exit 7',
      env: { GREETING: 'hello' },
    })
    assert.equal(result.exit_code, 7)
    assert.equal(result.stdout, 'out hello\n')
    assert.equal(result.stderr, 'err\n')
    assert.equal(result.timed_out, false)

    const argv = await paddock.sandboxes.exec(sandbox.id, { argv: ['cat'], stdin: 'piped in' })
    assert.equal(argv.exit_code, 0)
    assert.equal(argv.stdout, 'piped in')

    const stopped = await paddock.sandboxes.stop(sandbox.id)
    assert.equal(stopped.id, sandbox.id)
    assert.equal(stopped.state, 'stopped')
    assert.equal((await paddock.sandboxes.get(sandbox.id)).state, 'stopped')

    // a stopped sandbox refuses work with a typed 409
    await assert.rejects(paddock.sandboxes.exec(sandbox.id, { argv: ['true'] }), typedError(ConflictError, 409, 'sandbox_not_running'))
  })

  test('a streamed exec yields started, output bytes in order, then exit', async () => {
    const sandbox = janitor.track(await paddock.sandboxes.create())
    const events = await collect(
      paddock.sandboxes.execStream(sandbox.id, {
        shell: 'printf one; sleep 0.3; printf two >&2; sleep 0.3; printf three; exit 3',
      }),
    )
    assert.equal(events[0].type, 'started')
    assert.equal(typeof events[0].pid, 'number')
    const last = events.at(-1)
    assert.equal(last.type, 'exit')
    assert.equal(last.exit.exit_code, 3)
    const output = (kind) =>
      events
        .filter((e) => e.type === kind)
        .map((e) => text(e.data))
        .join('')
    assert.equal(output('stdout'), 'onethree')
    assert.equal(output('stderr'), 'two')
    assert.ok(
      events.every((e, i) => i === 0 || i === events.length - 1 || e.type === 'stdout' || e.type === 'stderr'),
      JSON.stringify(events.map((e) => e.type)),
    )
  })

  test('files: write and read back bytes and text, list, remove', async () => {
    const sandbox = janitor.track(await paddock.sandboxes.create())
    const bytes = new Uint8Array(256 * 4)
    for (let i = 0; i < bytes.length; i++) bytes[i] = i % 256
    const written = await paddock.files.write(sandbox.id, 'data/all bytes.bin', bytes)
    assert.deepEqual(written, { path: 'data/all bytes.bin', bytes: bytes.length })
    assert.deepEqual(await paddock.files.read(sandbox.id, 'data/all bytes.bin'), bytes)
    assert.deepEqual(
      await paddock.files.read(sandbox.id, 'data/all bytes.bin', { offset: 250, len: 10 }),
      bytes.slice(250, 260),
    )

    await paddock.files.write(sandbox.id, 'data/note.txt', 'grüße\n', { mode: 0o600 })
    assert.equal(await paddock.files.readText(sandbox.id, 'data/note.txt'), 'grüße\n')
    // what the file API wrote, a command inside sees
    const seen = await paddock.sandboxes.exec(sandbox.id, {
      shell: 'stat -c %a data/note.txt && cat data/note.txt && sha256sum "data/all bytes.bin" | cut -c1-64',
    })
    const digest = Buffer.from(await crypto.subtle.digest('SHA-256', bytes)).toString('hex')
    assert.equal(seen.stdout, `600\ngrüße\n${digest}\n`)

    // and what a command wrote, the file API reads
    await paddock.sandboxes.exec(sandbox.id, { shell: 'printf made-inside > data/inside.txt' })
    assert.equal(await paddock.files.readText(sandbox.id, 'data/inside.txt'), 'made-inside')

    const listing = await paddock.files.list(sandbox.id, 'data')
    assert.deepEqual(listing.entries.map((e) => [e.name, e.kind, e.size]).sort(), [
      ['all bytes.bin', 'file', 1024],
      ['inside.txt', 'file', 11],
      ['note.txt', 'file', 8],
    ])

    await paddock.files.remove(sandbox.id, 'data/inside.txt')
    await assert.rejects(
      paddock.files.read(sandbox.id, 'data/inside.txt'),
      typedError(NotFoundError, 404, 'file_not_found'),
    )
    await paddock.sandboxes.stop(sandbox.id)
  })

  test('processes: start, stream output to its exit, stdin, output by offset', async () => {
    const sandbox = janitor.track(await paddock.sandboxes.create())
    const counter = await paddock.processes.start(sandbox.id, {
      shell: 'for i in 1 2 3 4 5; do echo "line $i"; sleep 0.1; done; exit 4',
    })
    assert.equal(counter.running, true)
    const events = await collect(paddock.processes.stream(sandbox.id, counter.handle))
    const exit = events.at(-1)
    assert.equal(exit.type, 'exit')
    assert.equal(exit.exit.exit_code, 4)
    const chunks = events.filter((e) => e.type === 'output')
    assert.equal(chunks.map((c) => text(c.data)).join(''), 'line 1\nline 2\nline 3\nline 4\nline 5\n')
    // offsets are contiguous: each chunk starts where the last ended
    chunks.reduce((offset, chunk) => {
      assert.equal(chunk.offset, offset)
      return chunk.nextOffset
    }, 0)

    // from an offset, the stream starts there
    const tail = await collect(paddock.processes.stream(sandbox.id, counter.handle, { offset: 7 }))
    assert.equal(
      tail
        .filter((e) => e.type === 'output')
        .map((c) => text(c.data))
        .join(''),
      'line 2\nline 3\nline 4\nline 5\n',
    )

    const cat = await paddock.processes.start(sandbox.id, { argv: ['cat'] })
    await paddock.processes.stdin(sandbox.id, cat.handle, 'typed ')
    await paddock.processes.stdin(sandbox.id, cat.handle, new TextEncoder().encode('bytes\n'), { eof: true })
    const catEvents = await collect(paddock.processes.stream(sandbox.id, cat.handle))
    assert.equal(catEvents.at(-1).exit.exit_code, 0)
    const output = await paddock.processes.output(sandbox.id, cat.handle)
    assert.equal(output.data, 'typed bytes\n')
    assert.equal(output.running, false)

    const listed = await paddock.processes.list(sandbox.id)
    assert.deepEqual(listed.processes.map((p) => p.handle).sort(), [counter.handle, cat.handle].sort())

    const sleeper = await paddock.processes.start(sandbox.id, { argv: ['sleep', '300'] })
    await paddock.processes.signal(sandbox.id, sleeper.handle, 'KILL')
    const killed = await collect(paddock.processes.stream(sandbox.id, sleeper.handle))
    assert.equal(killed.at(-1).exit.signal, 9)
  })

  test('a process stream dropped mid-way resumes at the last offset received', async () => {
    const sandbox = janitor.track(await paddock.sandboxes.create())
    const proc = await paddock.processes.start(sandbox.id, {
      shell: 'for i in $(seq 1 8); do echo "chunk $i"; sleep 0.2; done',
    })
    const proxy = await droppingProxy(3)
    try {
      const viaProxy = new sdk.Paddock({ baseUrl: proxy.url, token: process.env.PADDOCK_TOKEN })
      const stream = viaProxy.processes.stream(sandbox.id, proc.handle, { retryDelayMs: 100 })
      const events = await collect(stream)
      assert.equal(proxy.state.drops, 1)
      assert.equal(stream.reconnects, 1)
      const chunks = events.filter((e) => e.type === 'output')
      const [opened, resumed] = proxy.state.eventRequests
      assert.equal(opened.lastEventId, undefined)
      // resumed at the offset after the third chunk, the last one received
      assert.equal(resumed.lastEventId, String(chunks[2].nextOffset))
      // every byte once, in order
      assert.equal(chunks.map((c) => text(c.data)).join(''), Array.from({ length: 8 }, (_, i) => `chunk ${i + 1}\n`).join(''))
      chunks.reduce((offset, chunk) => {
        assert.equal(chunk.offset, offset)
        return chunk.nextOffset
      }, 0)
      assert.equal(events.at(-1).type, 'exit')
      assert.equal(events.at(-1).exit.exit_code, 0)
    } finally {
      await proxy.close()
    }
  })
})
