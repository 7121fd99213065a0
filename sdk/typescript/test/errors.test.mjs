// Typed errors from the API's error body: the class follows the status, the
// code and message are the server's.
import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import {
  client,
  ConflictError,
  InvalidRequestError,
  NotFoundError,
  PaddockError,
  sandboxJanitor,
  sdk,
  TEST_TIMEOUT_MS,
  typedError,
  UnauthorizedError,
} from './support.mjs'

const paddock = client()
const janitor = sandboxJanitor(paddock)

describe('errors', { timeout: TEST_TIMEOUT_MS }, () => {
  test('404: NotFoundError with the code of what is missing', async () => {
    await assert.rejects(paddock.sandboxes.get('sb-no-such-sandbox'), typedError(NotFoundError, 404, 'sandbox_not_found'))
    await assert.rejects(paddock.runs.get(`run_${'0'.repeat(32)}`), typedError(NotFoundError, 404, 'run_not_found'))
    await assert.rejects(
      paddock.snapshots.get(`snap_${'0'.repeat(32)}`),
      typedError(NotFoundError, 404, 'snapshot_not_found'),
    )
    await assert.rejects(
      paddock.sessions.get(`ses_${'0'.repeat(32)}`),
      typedError(NotFoundError, 404, 'session_not_found'),
    )
    // another tenant's object is missing exactly as one that never was: no token of this suite has one
  })

  test('401: UnauthorizedError for a token the server does not know', async () => {
    const stranger = new sdk.Paddock({ baseUrl: process.env.PADDOCK_URL, token: 'not-a-token-of-this-server-at-all' })
    await assert.rejects(stranger.sandboxes.list(), typedError(UnauthorizedError, 401, 'unauthorized'))
    // health answers without a token, and says nothing more
    assert.deepEqual(await stranger.health(), { status: 'up' })
  })

  test('400 and 422: InvalidRequestError', async () => {
    await assert.rejects(paddock.runs.get('not-a-run-id'), typedError(InvalidRequestError, 400, 'invalid_id'))
    // a body of the wrong shape (the types forbid it; plain JavaScript may send it)
    await assert.rejects(paddock.sandboxes.create({ no_such_field: true }), (error) => {
      assert.ok(error instanceof InvalidRequestError)
      assert.equal(error.status, 422)
      assert.equal(error.code, 'invalid_request')
      assert.match(error.message, /no_such_field/)
      return true
    })
  })

  test('409: ConflictError; every typed error is a PaddockError and an Error', async () => {
    const sandbox = janitor.track(await paddock.sandboxes.create())
    await paddock.sandboxes.stop(sandbox.id)
    const error = await paddock.sandboxes.exec(sandbox.id, { argv: ['true'] }).catch((e) => e)
    typedError(ConflictError, 409, 'sandbox_not_running')(error)
    assert.ok(error instanceof Error)
    assert.ok(error instanceof PaddockError)
    assert.ok(!(error instanceof NotFoundError))
    assert.ok(error.stack.includes('ConflictError'))
  })
})
