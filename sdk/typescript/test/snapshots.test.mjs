// Snapshots: create, restore into a new sandbox, fork into several, and the
// archives: a snapshot's downloaded and uploaded again, a workspace's
// downloaded and uploaded as a new workspace.
import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { client, InvalidRequestError, NotFoundError, sandboxJanitor, TEST_TIMEOUT_MS, typedError } from './support.mjs'

const paddock = client()
const janitor = sandboxJanitor(paddock)

/** A sandbox whose workspace holds a few files, and their expected contents. */
async function seeded() {
  const sandbox = janitor.track(await paddock.sandboxes.create())
  const files = {
    'README.md': '# seeded\n',
    'src/main.sh': '#!/bin/sh\necho main\n',
    'deep/er/still.txt': 'x'.repeat(10_000),
  }
  for (const [path, content] of Object.entries(files)) {
    await paddock.files.write(sandbox.id, path, content)
  }
  await paddock.sandboxes.exec(sandbox.id, { shell: 'chmod 755 src/main.sh && mkdir -p empty/dir' })
  return { sandbox, files }
}

async function assertHolds(sandboxId, files) {
  for (const [path, content] of Object.entries(files)) {
    assert.equal(await paddock.files.readText(sandboxId, path), content, `${sandboxId}: ${path}`)
  }
  const run = await paddock.sandboxes.exec(sandboxId, { shell: './src/main.sh && test -d empty/dir && echo ok' })
  assert.equal(run.stdout, 'main\nok\n', `${sandboxId}: modes and empty directories kept`)
}

describe('snapshots', { timeout: TEST_TIMEOUT_MS }, () => {
  test('create, get, list, restore into a new sandbox', async () => {
    const { sandbox, files } = await seeded()
    const snapshot = await paddock.snapshots.create(sandbox.id, { excludes: ['*.log'] })
    assert.match(snapshot.id, /^snap_[0-9a-f]{32}$/)
    assert.equal(snapshot.source_sandbox, sandbox.id)
    assert.ok(snapshot.file_count >= 7, `entries: ${snapshot.file_count}`)
    assert.ok(snapshot.excludes.includes('*.log'))
    assert.deepEqual(await paddock.snapshots.get(snapshot.id), snapshot)
    const listed = await paddock.snapshots.list({ limit: 1000 })
    assert.ok(listed.snapshots.some((s) => s.id === snapshot.id))

    // the source changes after the snapshot; the restore has the files as they were
    await paddock.files.write(sandbox.id, 'README.md', 'changed later\n')
    const [restored, ...more] = janitor.trackAll(await paddock.snapshots.restore(snapshot.id))
    assert.equal(more.length, 0)
    assert.notEqual(restored.id, sandbox.id)
    assert.equal(restored.state, 'running')
    assert.equal(restored.restored_from, snapshot.id)
    await assertHolds(restored.id, files)
    assert.equal(await paddock.files.readText(sandbox.id, 'README.md'), 'changed later\n')
  })

  test('fork: several sandboxes from one snapshot, each on its own copy', async () => {
    const { sandbox, files } = await seeded()
    const snapshot = await paddock.snapshots.create(sandbox.id)
    const forks = janitor.trackAll(await paddock.snapshots.fork(snapshot.id, 3))
    assert.equal(forks.length, 3)
    assert.equal(new Set(forks.map((f) => f.id)).size, 3)
    for (const [i, fork] of forks.entries()) {
      assert.equal(fork.restored_from, snapshot.id)
      await assertHolds(fork.id, files)
      await paddock.files.write(fork.id, 'mine.txt', `fork ${i}`)
    }
    // each writes its own workspace: no fork sees another's file
    for (const [i, fork] of forks.entries()) {
      assert.equal(await paddock.files.readText(fork.id, 'mine.txt'), `fork ${i}`)
    }
    await assert.rejects(paddock.files.read(sandbox.id, 'mine.txt'), typedError(NotFoundError, 404, 'file_not_found'))

    // a snapshot of a fork names the one it came from
    const child = await paddock.snapshots.create(forks[0].id)
    assert.equal(child.parent, snapshot.id)
  })

  test('archive download and upload: a snapshot round trip', async () => {
    const { sandbox, files } = await seeded()
    const snapshot = await paddock.snapshots.create(sandbox.id)
    const archive = await paddock.snapshots.downloadBytes(snapshot.id)
    assert.equal(archive.length, snapshot.bytes_compressed)
    // zstd's magic number
    assert.deepEqual([...archive.slice(0, 4)], [0x28, 0xb5, 0x2f, 0xfd])
    const digest = Buffer.from(await crypto.subtle.digest('SHA-256', archive)).toString('hex')
    assert.equal(digest, snapshot.blob_hash)

    // uploaded as a stream of chunks
    const stream = await paddock.snapshots.download(snapshot.id)
    const imported = await paddock.snapshots.upload(stream, { max_files: 1000 })
    assert.notEqual(imported.id, snapshot.id)
    assert.equal(imported.blob_hash, snapshot.blob_hash)
    assert.equal(imported.file_count, snapshot.file_count)
    const [restored] = janitor.trackAll(await paddock.snapshots.restore(imported.id))
    await assertHolds(restored.id, files)

    // an archive that is not one is refused, typed
    await assert.rejects(
      paddock.snapshots.upload(new TextEncoder().encode('not an archive')),
      typedError(InvalidRequestError, 400, 'archive_refused'),
    )
  })

  test('workspace archive: download, upload as a new workspace, a sandbox on it', async () => {
    const workspace = await paddock.workspaces.create({ name: 'sdk-ts-archive' })
    const writer = janitor.track(await paddock.sandboxes.create({ workspace: workspace.id }))
    await paddock.files.write(writer.id, 'kept/file.txt', 'in the workspace\n')
    await paddock.sandboxes.stop(writer.id)

    const archive = await paddock.workspaces.downloadBytes(workspace.id)
    assert.ok(archive.length > 0)
    const copy = await paddock.workspaces.upload(archive, { name: 'sdk-ts-archive-copy' })
    assert.notEqual(copy.id, workspace.id)
    assert.equal(copy.name, 'sdk-ts-archive-copy')
    assert.deepEqual(await paddock.workspaces.get(copy.id), copy)

    const reader = janitor.track(await paddock.sandboxes.create({ workspace: copy.id, read_only: true }))
    assert.equal(await paddock.files.readText(reader.id, 'kept/file.txt'), 'in the workspace\n')
    await paddock.sandboxes.stop(reader.id)
    assert.equal((await paddock.workspaces.delete(copy.id)).id, copy.id)
    await assert.rejects(paddock.workspaces.get(copy.id), typedError(NotFoundError, 404, 'workspace_not_found'))
  })
})
