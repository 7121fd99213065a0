// Fixtures of the SDK's suite: the SDK as the packed tarball installed it,
// a client for the server under test, and helpers.
//
// The suite runs against a live `paddock serve`, named by:
// - PADDOCK_URL: the server (http://127.0.0.1:PORT);
// - PADDOCK_TOKEN: a tenant's token;
// - PADDOCK_SDK_TYPESCRIPT: the directory scripts/sdk-typescript-setup.sh
//   installed the packed tarball into (it prints it). The SDK is imported
//   from there, never from src/ or dist/, so what is tested is what packs.
//
// tests/tests/scenarios/sdk_typescript.rs starts the server and runs it.

import assert from 'node:assert/strict'
import { existsSync, readFileSync, realpathSync } from 'node:fs'
import { createRequire } from 'node:module'
import net from 'node:net'
import { join, sep } from 'node:path'
import { afterEach } from 'node:test'
import { pathToFileURL } from 'node:url'

const REQUIRED = ['PADDOCK_URL', 'PADDOCK_TOKEN', 'PADDOCK_SDK_TYPESCRIPT']
const missing = REQUIRED.filter((name) => !process.env[name])
if (missing.length > 0) {
  throw new Error(`the SDK suite needs ${missing.join(', ')} (see test/support.mjs)`)
}

export const URL_ = process.env.PADDOCK_URL.replace(/\/+$/, '')
export const TOKEN = process.env.PADDOCK_TOKEN
export const SDK_DIR = realpathSync(process.env.PADDOCK_SDK_TYPESCRIPT)
export const PACKAGE = '@paddock/sdk'

/** Where the installed package's entry point is, resolved from the test directory. */
export const ENTRY = createRequire(join(SDK_DIR, 'package.json')).resolve(PACKAGE)
const installed = join(SDK_DIR, 'node_modules', ...PACKAGE.split('/')) + sep
if (!realpathSync(ENTRY).startsWith(installed)) {
  throw new Error(`${PACKAGE} resolved to ${ENTRY}, not into ${installed}: run scripts/sdk-typescript-setup.sh`)
}
/** The installed package's directory and package.json. */
export const PACKAGE_DIR = installed
export const PACKAGE_JSON = JSON.parse(readFileSync(join(installed, 'package.json'), 'utf8'))
if (!existsSync(join(installed, 'dist', 'index.d.ts'))) {
  throw new Error(`${installed} has no dist/index.d.ts: the tarball lacks its types`)
}

export const sdk = await import(pathToFileURL(ENTRY).href)
export const { Paddock, PaddockError, NotFoundError, ConflictError, InvalidRequestError, UnauthorizedError } = sdk

/**
 * A validator for assert.rejects: the error is the SDK's `Class` (and a
 * PaddockError) with this status and code, and a message for people.
 */
export function typedError(Class, status, code) {
  return (error) => {
    assert.ok(error instanceof Class, `want ${Class.name}, got ${error?.name}: ${error?.message}`)
    assert.ok(error instanceof PaddockError)
    assert.equal(error.name, Class.name)
    assert.equal(error.status, status)
    assert.equal(error.code, code)
    assert.ok(error.message.length > 0)
    assert.deepEqual(error.body, { error: { code, message: error.message } })
    return true
  }
}

/** A client of the server under test (another token or base URL on request). */
export function client(options = {}) {
  return new Paddock({ baseUrl: URL_, token: TOKEN, ...options })
}

/** The bound of one test: a hang fails it instead of the whole run. */
export const TEST_TIMEOUT_MS = 120_000

/**
 * Sandboxes to stop when each test ends, passed or failed (a tenant runs 8
 * at most by default): `track` returns the sandbox for chaining.
 */
export function sandboxJanitor(paddock) {
  const ids = new Set()
  afterEach(async () => {
    for (const id of ids) {
      await paddock.sandboxes.stop(id).catch(() => undefined)
    }
    ids.clear()
  })
  return {
    track(sandbox) {
      ids.add(sandbox.id)
      return sandbox
    },
    trackAll(sandboxes) {
      for (const sandbox of sandboxes) ids.add(sandbox.id)
      return sandboxes
    },
  }
}

export const text = (bytes) => new TextDecoder().decode(bytes)

/** Every item of an async iterable. */
export async function collect(iterable) {
  const items = []
  for await (const item of iterable) items.push(item)
  return items
}

/** A scripted model's turn that runs one command. */
export function command(cmd, say = 'working') {
  return { text: say, tool_calls: [{ name: 'run_command', arguments: { command: cmd } }] }
}

/** The last turn of a scripted model: the task is done. */
export function complete(summary = 'done') {
  return {
    text: summary,
    tool_calls: [{ name: 'complete_task', arguments: { verdict: 'met', summary, evidence: ['the commands ran'] } }],
  }
}

/** A workspace and an agent session in it. */
export async function newSession(paddock, title) {
  const workspace = await paddock.workspaces.create({ name: `sdk-ts-${title}` })
  const session = await paddock.sessions.create({ workspace: workspace.id, title })
  return { workspace, session }
}

/** The session's stored events so far, in order (seq 1, 2, ...). */
export async function storedEvents(paddock, sessionId) {
  return collect(paddock.events(sessionId, { until: 'caught_up', transient: false }))
}

/** Asserts that `events` are seq 1..n of the session, each once, in order. */
export function assertWholeSequence(events, stored) {
  const seqs = events.filter((e) => e.stored).map((e) => e.seq)
  assert.deepEqual(
    seqs,
    stored.map((e) => e.seq),
    'every stored event exactly once, in order',
  )
  assert.deepEqual(
    seqs,
    Array.from({ length: seqs.length }, (_, i) => i + 1),
  )
}

export const FINISHED = new Set(['completed', 'cancelled', 'failed', 'interrupted'])

/**
 * A TCP proxy to the server that cuts the first connection carrying an
 * event stream (a session's or run's `/events`, a process's `/stream`) right
 * after its `dropAfter`-th event with an id (the bytes up to that event's
 * end are passed on, nothing after), as a dropped connection does. Records
 * the path and `Last-Event-ID` of each stream request.
 */
export async function droppingProxy(dropAfter) {
  const target = new URL(URL_)
  const state = { drops: 0, eventRequests: [] }
  const sockets = new Set()
  const server = net.createServer((client) => {
    const upstream = net.connect(Number(target.port), target.hostname)
    sockets.add(client)
    sockets.add(upstream)
    let cutThis = false
    let seen = 0
    let pending = ''
    client.on('data', (chunk) => {
      const head = chunk.toString('latin1')
      const request = /^GET (\S*\/(?:events|stream)(?:\?\S*)?) HTTP/.exec(head)
      if (request) {
        const lastId = /\r\nlast-event-id: *(\S+)/i.exec(head)
        state.eventRequests.push({ path: request[1], lastEventId: lastId ? lastId[1] : undefined })
        if (state.drops === 0 && !cutThis) {
          cutThis = true
          state.drops = 1
        }
      }
      upstream.write(chunk)
    })
    upstream.on('data', (chunk) => {
      if (!cutThis) {
        client.write(chunk)
        return
      }
      // pass on up to the end of the dropAfter-th event with an id, then cut
      pending += chunk.toString('latin1')
      let at = 0
      let cutAt = -1
      for (;;) {
        const id = pending.indexOf('\nid: ', at)
        if (id === -1) break
        const end = pending.indexOf('\n\n', id)
        if (end === -1) break
        seen += 1
        at = end + 2
        if (seen === dropAfter) {
          cutAt = at
          break
        }
      }
      if (cutAt === -1) {
        // keep the tail that may hold a partial event; pass on the rest
        const keep = Math.max(pending.lastIndexOf('\nid: '), at)
        client.write(Buffer.from(pending.slice(0, keep), 'latin1'))
        pending = pending.slice(keep)
        return
      }
      client.write(Buffer.from(pending.slice(0, cutAt), 'latin1'), () => {
        client.destroy()
        upstream.destroy()
      })
      pending = ''
      cutThis = false
      upstream.removeAllListeners('data')
    })
    const close = () => {
      client.destroy()
      upstream.destroy()
    }
    client.on('error', close)
    upstream.on('error', close)
    client.on('close', close)
    upstream.on('close', close)
  })
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    url: `http://127.0.0.1:${server.address().port}`,
    state,
    async close() {
      for (const socket of sockets) socket.destroy()
      await new Promise((resolve) => server.close(resolve))
    },
  }
}
