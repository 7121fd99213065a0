"""Snapshots and workspaces through the SDK: a snapshot restored into a new
sandbox, forked into several, and moved out and back in as an archive."""

from __future__ import annotations

import io

import pytest

import paddock
from paddock import Paddock
from paddock.models import SnapshotView

ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"


def _seed(client: Paddock, sandbox: str) -> None:
    client.sandboxes.files.write(sandbox, "app/main.py", "print('hi')\n")
    client.sandboxes.files.write(sandbox, "data.bin", bytes(range(256)))
    client.sandboxes.files.write(sandbox, "scratch.log", "left out\n")


def _assert_seeded(client: Paddock, sandbox: str) -> None:
    assert client.sandboxes.files.read_text(sandbox, "app/main.py") == "print('hi')\n"
    assert client.sandboxes.files.read(sandbox, "data.bin") == bytes(range(256))


def test_a_snapshot_is_taken_and_restored_into_a_new_sandbox(client: Paddock, sandboxes) -> None:
    source = sandboxes.create()
    _seed(client, source.id)
    snapshot = client.snapshots.create(source.id, excludes=["*.log"])
    assert isinstance(snapshot, SnapshotView)
    assert snapshot.source_sandbox == source.id
    assert snapshot.excludes == ["*.log"]
    # app/, app/main.py, data.bin (the log left out)
    assert snapshot.file_count == 3
    assert snapshot.bytes_raw == len("print('hi')\n") + 256
    assert client.snapshots.get(snapshot.id).blob_hash == snapshot.blob_hash
    assert snapshot.id in [s.id for s in client.snapshots.list(limit=1000).snapshots]

    # the source changes after the snapshot; the restore does not see it
    client.sandboxes.files.write(source.id, "app/main.py", "changed\n")
    [restored] = sandboxes.adopt(client.snapshots.restore(snapshot.id))
    assert restored.id != source.id
    assert restored.restored_from == snapshot.id
    assert restored.state == "running"
    _assert_seeded(client, restored.id)
    with pytest.raises(paddock.NotFound):
        client.sandboxes.files.read(restored.id, "scratch.log")

    # a snapshot of the restored sandbox names its parent
    child = client.snapshots.create(restored.id)
    assert child.parent == snapshot.id
    with pytest.raises(paddock.Conflict) as refused:
        client.snapshots.delete(snapshot.id)
    assert refused.value.code == "conflict"
    assert client.snapshots.delete(child.id).id == child.id
    assert client.snapshots.delete(snapshot.id).id == snapshot.id
    with pytest.raises(paddock.NotFound) as gone:
        client.snapshots.get(snapshot.id)
    assert gone.value.code == "snapshot_not_found"


def test_a_fork_makes_independent_sandboxes_from_one_snapshot(client: Paddock, sandboxes) -> None:
    source = sandboxes.create()
    _seed(client, source.id)
    snapshot = client.snapshots.create(source.id)
    forks = sandboxes.adopt(client.snapshots.fork(snapshot.id, 3))
    assert len(forks) == 3
    assert len({f.id for f in forks}) == 3
    assert len({f.workspace for f in forks}) == 3
    for i, fork in enumerate(forks):
        assert fork.restored_from == snapshot.id
        _assert_seeded(client, fork.id)
        client.sandboxes.files.write(fork.id, "who", f"fork {i}")
    # each wrote its own workspace
    for i, fork in enumerate(forks):
        assert client.sandboxes.files.read_text(fork.id, "who") == f"fork {i}"
    with pytest.raises(paddock.NotFound):
        client.sandboxes.files.read(source.id, "who")


def test_a_snapshot_archive_downloads_and_uploads(client: Paddock, sandboxes, tmp_path) -> None:
    source = sandboxes.create()
    _seed(client, source.id)
    snapshot = client.snapshots.create(source.id)

    path = tmp_path / "snap.tar.zst"
    size = client.snapshots.download(snapshot.id, path)
    archive = path.read_bytes()
    assert size == len(archive) == snapshot.bytes_compressed
    assert archive.startswith(ZSTD_MAGIC)
    buffer = io.BytesIO()
    assert client.snapshots.download(snapshot.id, buffer) == size
    assert buffer.getvalue() == archive

    # uploaded from a file: the same content, so the same blob
    uploaded = client.snapshots.upload(path)
    assert uploaded.id != snapshot.id
    assert uploaded.blob_hash == snapshot.blob_hash
    assert uploaded.file_count == snapshot.file_count
    [restored] = sandboxes.adopt(client.snapshots.restore(uploaded.id))
    _assert_seeded(client, restored.id)

    with pytest.raises(paddock.InvalidRequest) as refused:
        client.snapshots.upload(b"not an archive")
    assert (refused.value.status, refused.value.code) == (400, "archive_refused")


def test_a_workspace_uploads_downloads_and_outlives_its_sandbox(
    client: Paddock, sandboxes, tmp_path
) -> None:
    source = sandboxes.create()
    _seed(client, source.id)
    archive = tmp_path / "snap.tar.zst"
    client.snapshots.download(client.snapshots.create(source.id).id, archive)

    with archive.open("rb") as file:
        workspace = client.workspaces.upload(file, name="sdk-upload")
    assert workspace.name == "sdk-upload"
    assert client.workspaces.get(workspace.id).id == workspace.id

    on_it = sandboxes.create(workspace=workspace.id)
    assert on_it.workspace == workspace.id
    _assert_seeded(client, on_it.id)
    client.sandboxes.files.write(on_it.id, "added.txt", "added")
    client.sandboxes.stop(on_it.id)

    again = sandboxes.create(workspace=workspace.id)
    assert client.sandboxes.files.read_text(again.id, "added.txt") == "added"
    client.sandboxes.stop(again.id)

    out = tmp_path / "workspace.tar.zst"
    size = client.workspaces.download(workspace.id, out)
    assert size == out.stat().st_size and out.read_bytes().startswith(ZSTD_MAGIC)
    copy = client.workspaces.upload(out.read_bytes(), name="sdk-copy")
    third = sandboxes.create(workspace=copy.id)
    assert client.sandboxes.files.read_text(third.id, "added.txt") == "added"
    _assert_seeded(client, third.id)
    client.sandboxes.stop(third.id)

    assert client.workspaces.delete(copy.id).id == copy.id
    with pytest.raises(paddock.NotFound) as gone:
        client.workspaces.get(copy.id)
    assert gone.value.code == "workspace_not_found"
