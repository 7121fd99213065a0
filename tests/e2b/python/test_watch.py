"""Directory watches through the real E2B Python SDK: `files.watch_dir` of
the sync SDK (CreateWatcher, GetWatcherEvents, RemoveWatcher) and of the
async one (the WatchDir stream).

The assertions hold for envd's inotify watches and for Paddock's polled
ones alike: an expected event must show up within a few seconds, other
events may come along (inotify reports a write as CREATE then WRITE, a
poll as one CREATE), and a rename may show as RENAME or REMOVE of the old
name.
"""

import asyncio
import time

import pytest

from e2b import (
    AsyncSandbox,
    FileNotFoundException,
    FilesystemEventType,
    InvalidArgumentException,
    SandboxException,
)

CREATE = FilesystemEventType.CREATE
WRITE = FilesystemEventType.WRITE
REMOVE = FilesystemEventType.REMOVE
RENAME = FilesystemEventType.RENAME
CHMOD = FilesystemEventType.CHMOD

# How long an expected event may take to show up.
WAIT_SECS = 10


def pairs(events) -> set:
    return {(e.name, e.type) for e in events}


def events_until(handle, expected: set, seconds: float = WAIT_SECS) -> set:
    """The (name, type) pairs of the handle's new events, read until every
    pair of `expected` was among them."""
    seen = set()
    deadline = time.monotonic() + seconds
    while True:
        seen |= pairs(handle.get_new_events())
        if expected <= seen:
            return seen
        if time.monotonic() > deadline:
            raise AssertionError(
                f"not within {seconds} s: {sorted(expected - seen)}; seen {sorted(seen)}"
            )
        time.sleep(0.2)


def quiet(handle, seconds: float = 1.0) -> set:
    """The events a handle reports over `seconds` (for changes it must not
    report)."""
    time.sleep(seconds)
    return pairs(handle.get_new_events())


def test_a_watch_reports_created_written_chmodded_and_removed_entries(sandbox, home):
    w = f"{home}/w"
    sandbox.files.make_dir(w)
    handle = sandbox.files.watch_dir(w)
    try:
        assert handle.get_new_events() == []

        sandbox.files.write(f"{w}/a.txt", "hello")
        sandbox.files.make_dir(f"{w}/d")
        seen = events_until(handle, {("a.txt", CREATE), ("d", CREATE)})
        assert {name for name, _ in seen} == {"a.txt", "d"}

        sandbox.files.write(f"{w}/a.txt", "hello, world")
        events_until(handle, {("a.txt", WRITE)})

        sandbox.commands.run(f"chmod 600 {w}/a.txt")
        events_until(handle, {("a.txt", CHMOD)})

        # Not recursive: a file inside a subdirectory is not reported.
        sandbox.files.write(f"{w}/d/inner.txt", "x")
        assert not {name for name, _ in quiet(handle)} & {"d/inner.txt", "inner.txt"}

        sandbox.files.remove(f"{w}/a.txt")
        seen = events_until(handle, {("a.txt", REMOVE)})
        assert {name for name, _ in seen} == {"a.txt"}
    finally:
        handle.stop()


def test_a_recursive_watch_sees_nested_entries_by_their_relative_paths(sandbox, home):
    r = f"{home}/r"
    sandbox.files.make_dir(f"{r}/sub")
    handle = sandbox.files.watch_dir(r, recursive=True)
    shallow = sandbox.files.watch_dir(r)
    try:
        sandbox.files.write(f"{r}/sub/f.txt", "nested")
        sandbox.files.make_dir(f"{r}/sub/deeper")
        sandbox.files.write(f"{r}/sub/deeper/g.txt", "deeper")
        events_until(
            handle,
            {
                ("sub/f.txt", CREATE),
                ("sub/deeper", CREATE),
                ("sub/deeper/g.txt", CREATE),
            },
        )
        nested = {n for n, _ in quiet(shallow, 0.5)} & {"sub/f.txt", "f.txt", "g.txt"}
        assert not nested

        sandbox.files.rename(f"{r}/sub/f.txt", f"{r}/sub/h.txt")
        seen = events_until(handle, {("sub/h.txt", CREATE)})
        assert seen & {("sub/f.txt", REMOVE), ("sub/f.txt", RENAME)}, seen
    finally:
        handle.stop()
        shallow.stop()


def test_a_stopped_watch_gives_no_more_events(sandbox, home):
    w = f"{home}/stopped"
    sandbox.files.make_dir(w)
    handle = sandbox.files.watch_dir(w)
    handle.stop()
    with pytest.raises(SandboxException):
        handle.get_new_events()


def test_watching_a_missing_path_or_a_file_is_refused(sandbox, home):
    with pytest.raises(FileNotFoundException):
        sandbox.files.watch_dir(f"{home}/no-such-dir")
    sandbox.files.write(f"{home}/plain.txt", "not a directory")
    with pytest.raises(InvalidArgumentException):
        sandbox.files.watch_dir(f"{home}/plain.txt")


def test_the_async_watch_streams_events_as_they_happen(sandbox, home):
    s = f"{home}/streamed"
    sandbox.files.make_dir(s)

    async def watch() -> set:
        sandbox_async = await AsyncSandbox.connect(sandbox.sandbox_id)
        seen = []
        ended = []
        handle = await sandbox_async.files.watch_dir(
            s, on_event=seen.append, on_exit=ended.append, timeout=60
        )
        try:
            await sandbox_async.files.write(f"{s}/x.txt", "x")
            await sandbox_async.files.remove(f"{s}/x.txt")
            await sandbox_async.files.write(f"{s}/y.txt", "y")
            deadline = time.monotonic() + WAIT_SECS
            while ("y.txt", CREATE) not in pairs(seen):
                if time.monotonic() > deadline or ended:
                    break
                await asyncio.sleep(0.1)
            # The watch is still going (on_exit comes with stop(), not before).
            assert not ended, ended
        finally:
            await handle.stop()
        return pairs(seen)

    seen = asyncio.run(watch())
    assert ("y.txt", CREATE) in seen, seen
    assert {name for name, _ in seen} <= {"x.txt", "y.txt"}, seen
