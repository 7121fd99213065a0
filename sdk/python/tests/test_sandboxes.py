"""Sandboxes through the SDK: lifecycle, exec (JSON and streamed), files,
background processes and their output stream, resumed after a cut."""

from __future__ import annotations

import base64
import hashlib

import pytest

import paddock
from paddock import ExecOutput, Paddock, ProcessOutput
from paddock.models import ExecStarted, ExitView, SandboxView


def test_a_sandbox_is_created_listed_used_and_stopped(client: Paddock, sandboxes) -> None:
    sandbox = sandboxes.create(network="none", metadata={"suite": "sdk-python"})
    assert isinstance(sandbox, SandboxView)
    assert sandbox.state == "running"
    assert sandbox.network == "none"
    assert sandbox.metadata == {"suite": "sdk-python"}

    assert client.sandboxes.get(sandbox.id).id == sandbox.id
    listed = client.sandboxes.list(state="running", limit=1000)
    assert sandbox.id in [s.id for s in listed.sandboxes]

    result = client.sandboxes.exec(sandbox.id, ["sh", "-c", "echo out; echo err >&2; exit 3"])
    assert (result.exit_code, result.stdout, result.stderr) == (3, "out\n", "err\n")
    assert result.timed_out is False

    stopped = client.sandboxes.stop(sandbox.id)
    assert stopped.state == "stopped"
    assert client.sandboxes.get(sandbox.id).state == "stopped"
    with pytest.raises(paddock.Conflict) as refused:
        client.sandboxes.exec(sandbox.id, ["true"])
    assert refused.value.status == 409
    assert refused.value.code == "sandbox_not_running"


def test_exec_takes_stdin_env_cwd_and_bytes(client: Paddock, sandboxes) -> None:
    sandbox = sandboxes.create()
    client.sandboxes.files.write(sandbox.id, "sub/keep", b"")
    result = client.sandboxes.exec(
        sandbox.id,
        shell='printf "%s|%s|" "$GREETING" "$(pwd)"; cat',
        env={"GREETING": "hello"},
        cwd="sub",
        stdin=b"\x00\xffraw",
        output_encoding="base64",
    )
    assert result.exit_code == 0
    assert base64.b64decode(result.stdout) == b"hello|/workspace/sub|\x00\xffraw"

    timed = client.sandboxes.exec(sandbox.id, ["sleep", "10"], timeout_ms=300)
    assert timed.timed_out is True
    assert timed.exit_code is None


def test_a_streamed_exec_yields_its_output_then_its_exit(client: Paddock, sandboxes) -> None:
    sandbox = sandboxes.create()
    items = list(
        client.sandboxes.exec_stream(sandbox.id, shell="echo one; sleep 0.2; echo two >&2; exit 4")
    )
    assert isinstance(items[0], ExecStarted) and items[0].pid > 0
    outputs = [(i.stream, i.data) for i in items if isinstance(i, ExecOutput)]
    assert outputs == [("stdout", "one\n"), ("stderr", "two\n")]
    assert isinstance(items[-1], ExitView)
    assert items[-1].exit_code == 4


def test_files_round_trip_with_binary_content_and_odd_names(client: Paddock, sandboxes) -> None:
    sandbox = sandboxes.create()
    content = bytes(range(256)) * 64
    written = client.sandboxes.files.write(sandbox.id, "dir/a b%.bin", content, mode=0o600)
    assert (written.path, written.bytes) == ("dir/a b%.bin", len(content))

    assert client.sandboxes.files.read(sandbox.id, "dir/a b%.bin") == content
    assert client.sandboxes.files.read(sandbox.id, "/workspace/dir/a b%.bin") == content
    assert (
        client.sandboxes.files.read(sandbox.id, "dir/a b%.bin", offset=10, length=5)
        == content[10:15]
    )

    listing = client.sandboxes.files.list(sandbox.id, "dir")
    [entry] = listing.entries
    assert (entry.name, entry.kind, entry.size, entry.mode & 0o777) == (
        "a b%.bin",
        "file",
        len(content),
        0o600,
    )
    # the sandbox sees the same bytes
    digest = client.sandboxes.exec(sandbox.id, ["sha256sum", "dir/a b%.bin"]).stdout
    assert digest.split()[0] == hashlib.sha256(content).hexdigest()

    # a name that is not UTF-8, by its bytes
    client.sandboxes.files.write(sandbox.id, b"old\xff", b"latin")
    names = {e.name_bytes for e in client.sandboxes.files.list(sandbox.id).entries}
    assert base64.b64encode(b"old\xff").decode() in names
    assert client.sandboxes.files.read(sandbox.id, b"old\xff") == b"latin"

    client.sandboxes.files.delete(sandbox.id, "dir", recursive=True)
    with pytest.raises(paddock.NotFound) as gone:
        client.sandboxes.files.read(sandbox.id, "dir/a b%.bin")
    assert gone.value.code == "file_not_found"

    with pytest.raises(paddock.InvalidRequest) as escape:
        client.sandboxes.files.read(sandbox.id, "../etc/passwd")
    assert (escape.value.status, escape.value.code) == (400, "path_escape")


def test_a_background_process_is_fed_and_followed(client: Paddock, sandboxes) -> None:
    sandbox = sandboxes.create()
    process = client.sandboxes.processes.start(sandbox.id, ["sh", "-c", "cat; echo bye; exit 7"])
    assert process.running is True
    client.sandboxes.processes.stdin(sandbox.id, process.handle, b"first\n")
    client.sandboxes.processes.stdin(sandbox.id, process.handle, "second\n", eof=True)

    out = b""
    exit_view = None
    for item in client.sandboxes.processes.stream(sandbox.id, process.handle):
        if isinstance(item, ProcessOutput):
            assert item.offset == len(out)
            out += item.data
        else:
            exit_view = item
    assert out == b"first\nsecond\nbye\n"
    assert exit_view is not None and exit_view.exit_code == 7

    listed = client.sandboxes.processes.list(sandbox.id)
    [view] = [p for p in listed if p.handle == process.handle]
    assert (view.running, view.exit.exit_code) == (False, 7)
    page = client.sandboxes.processes.output(sandbox.id, process.handle, offset=6)
    assert (page.data, page.next_offset) == ("second\nbye\n", len(out))


def test_a_background_process_is_signalled(client: Paddock, sandboxes) -> None:
    sandbox = sandboxes.create()
    process = client.sandboxes.processes.start(sandbox.id, ["sleep", "60"])
    client.sandboxes.processes.signal(sandbox.id, process.handle, "TERM")
    items = list(client.sandboxes.processes.stream(sandbox.id, process.handle))
    assert isinstance(items[-1], ExitView)
    assert (items[-1].exit_code, items[-1].signal) == (None, 15)
    with pytest.raises(paddock.NotFound) as missing:
        client.sandboxes.processes.signal(sandbox.id, 999, "TERM")
    assert missing.value.code == "process_not_found"


def test_a_process_stream_cut_midway_resumes_at_its_offset(
    client: Paddock, sandboxes, cutting_proxy, token: str
) -> None:
    sandbox = sandboxes.create()
    process = client.sandboxes.processes.start(
        sandbox.id,
        shell="for i in 1 2 3 4 5 6; do echo line-$i; sleep 0.3; done",
    )
    # the first connection is cut once it carried an output event
    proxy, proxy_url = cutting_proxy(b"event: output")
    with Paddock(proxy_url, token) as through:
        stream = through.sandboxes.processes.stream(sandbox.id, process.handle)
        chunks = []
        exit_view = None
        for item in stream:
            if isinstance(item, ProcessOutput):
                chunks.append(item)
            else:
                exit_view = item
    data = b"".join(c.data for c in chunks)
    assert data == b"".join(b"line-%d\n" % i for i in range(1, 7))
    # contiguous: every chunk starts where the last ended (nothing lost or repeated)
    assert [c.offset for c in chunks] == [
        sum(len(x.data) for x in chunks[:i]) for i in range(len(chunks))
    ]
    assert exit_view is not None and exit_view.exit_code == 0
    assert proxy.cuts == 1
    assert stream.connections == 2
    resumed_at = proxy.connections[1].header("Last-Event-ID")
    assert resumed_at is not None and int(resumed_at) in {c.next_offset for c in chunks}


def test_pause_and_resume(client: Paddock, sandboxes) -> None:
    sandbox = sandboxes.create()
    client.sandboxes.files.write(sandbox.id, "kept.txt", "kept")
    paused = client.sandboxes.pause(sandbox.id, mode="filesystem")
    assert paused.state == "paused"
    assert paused.pause is not None and paused.pause.processes_kept is False
    resumed = client.sandboxes.resume(sandbox.id)
    assert resumed.state == "running"
    assert client.sandboxes.files.read_text(sandbox.id, "kept.txt") == "kept"


def test_search_finds_content(client: Paddock, sandboxes) -> None:
    sandbox = sandboxes.create()
    client.sandboxes.files.write(sandbox.id, "src/main.rs", "fn main() {}\n")
    client.sandboxes.files.write(sandbox.id, "src/lib.rs", "pub fn lib() {}\n")
    found = client.sandboxes.search(sandbox.id, path="src", content="fn main")
    assert [(m.path, m.line) for m in found.matches] == [("src/main.rs", 1)]
    assert found.truncated is False
