"""The real E2B Python SDK against a server that claims to speak E2B.

Each test makes its own sandboxes (conftest.py kills them) and asserts what
the SDK documents: lifecycle over the REST API, commands and files over envd,
and the isolation between sandboxes and between tenants.
"""

import datetime as dt
import os
import re
import time

import httpx
import pytest
from packaging.version import Version

from e2b import (
    AuthenticationException,
    CommandExitException,
    ConnectionConfig,
    FileNotFoundException,
    FileType,
    PtySize,
    Sandbox,
    SandboxNotFoundException,
    SandboxNotRunningException,
    SandboxQuery,
    SandboxState,
    TimeoutException,
)

MIB = 1024 * 1024


def now() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc)


def seconds_left(sandbox_id: str) -> float:
    """Seconds until the sandbox's end_at, as get_info reports it."""
    return (Sandbox.get_info(sandbox_id).end_at - now()).total_seconds()


def listed(query: SandboxQuery, **options) -> list:
    """Every sandbox of every page of Sandbox.list(query)."""
    paginator = Sandbox.list(query=query, **options)
    found = []
    while paginator.has_next:
        found.extend(paginator.next_items())
    return found


def wait_until(condition, seconds: float, what: str):
    deadline = time.monotonic() + seconds
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {seconds} s: {what}")
        time.sleep(0.2)


# --- lifecycle (REST) ---------------------------------------------------------


@pytest.mark.smoke
def test_create_with_metadata_envs_and_timeout_then_kill(make_sandbox, tag):
    metadata = {"suite": tag, "purpose": "create and kill"}
    sandbox = make_sandbox(
        metadata=metadata, envs={"CREATED_WITH": "envs-at-create"}, timeout=90
    )
    assert sandbox.sandbox_id
    assert sandbox.is_running()
    info = sandbox.get_info()
    assert info.metadata == metadata
    assert 80 <= (info.end_at - now()).total_seconds() <= 95
    assert sandbox.commands.run('echo "$CREATED_WITH"').stdout == "envs-at-create\n"

    assert sandbox.kill() is True
    assert not sandbox.is_running()
    with pytest.raises(SandboxNotFoundException):
        Sandbox.get_info(sandbox.sandbox_id)


def test_get_info_describes_the_running_sandbox(make_sandbox, tag):
    before = now()
    sandbox = make_sandbox(metadata={"suite": tag, "k": "v"}, timeout=100)
    info = sandbox.get_info()
    assert info.sandbox_id == sandbox.sandbox_id
    assert info.metadata == {"suite": tag, "k": "v"}
    assert info.state == SandboxState.RUNNING
    assert info.template_id
    assert before - dt.timedelta(seconds=5) <= info.started_at <= now()
    assert info.started_at < info.end_at
    assert info.cpu_count >= 1
    assert info.memory_mb >= 1
    assert Version(info.envd_version) >= Version("0.1.0")
    # the static form answers the same
    assert Sandbox.get_info(sandbox.sandbox_id).sandbox_id == sandbox.sandbox_id


def test_list_filters_by_metadata(make_sandbox, tag):
    first = make_sandbox(metadata={"suite": tag, "role": "first one"})
    second = make_sandbox(metadata={"suite": tag, "role": "second/one"})

    only_first = listed(SandboxQuery(metadata={"suite": tag, "role": "first one"}))
    assert [s.sandbox_id for s in only_first] == [first.sandbox_id]
    assert only_first[0].metadata == {"suite": tag, "role": "first one"}
    assert only_first[0].state == SandboxState.RUNNING

    only_second = listed(SandboxQuery(metadata={"role": "second/one", "suite": tag}))
    assert [s.sandbox_id for s in only_second] == [second.sandbox_id]

    both = listed(SandboxQuery(metadata={"suite": tag}))
    assert sorted(s.sandbox_id for s in both) == sorted(
        [first.sandbox_id, second.sandbox_id]
    )
    assert listed(SandboxQuery(metadata={"suite": tag, "role": "third"})) == []


def test_a_killed_sandbox_is_gone(make_sandbox, tag):
    sandbox = make_sandbox(metadata={"suite": tag})
    sandbox_id = sandbox.sandbox_id
    assert Sandbox.kill(sandbox_id) is True

    assert sandbox.kill() is False
    assert Sandbox.kill(sandbox_id) is False
    with pytest.raises(SandboxNotFoundException):
        Sandbox.connect(sandbox_id)
    with pytest.raises(SandboxNotFoundException):
        sandbox.set_timeout(60)
    assert listed(SandboxQuery(metadata={"suite": tag})) == []
    with pytest.raises(SandboxNotRunningException):
        sandbox.commands.run("echo still here")


def test_set_timeout_moves_the_end(sandbox):
    sandbox.set_timeout(300)
    assert 290 <= seconds_left(sandbox.sandbox_id) <= 305
    sandbox.set_timeout(40)
    assert 30 <= seconds_left(sandbox.sandbox_id) <= 45


def test_a_sandbox_ends_at_its_timeout(make_sandbox):
    sandbox = make_sandbox(timeout=2)
    sandbox_id = sandbox.sandbox_id

    def gone():
        try:
            Sandbox.get_info(sandbox_id)
            return False
        except SandboxNotFoundException:
            return True

    wait_until(gone, 30, f"sandbox {sandbox_id} ended after its 2 s timeout")
    assert Sandbox.kill(sandbox_id) is False


def test_connect_by_id_reaches_the_same_sandbox(make_sandbox, home):
    sandbox = make_sandbox(timeout=60)
    sandbox.files.write(f"{home}/marker.txt", "written before connect\n")

    same = Sandbox.connect(sandbox.sandbox_id, timeout=600)
    assert same.sandbox_id == sandbox.sandbox_id
    assert same.commands.run(f"cat {home}/marker.txt").stdout == "written before connect\n"
    # a longer timeout given to connect extends a running sandbox's
    assert 590 <= seconds_left(sandbox.sandbox_id) <= 605


# --- commands (envd process service) -----------------------------------------


def test_run_returns_stdout(sandbox):
    result = sandbox.commands.run("echo hello e2b")
    assert (result.stdout, result.stderr, result.exit_code) == ("hello e2b\n", "", 0)


@pytest.mark.smoke
def test_run_returns_stderr(sandbox):
    seen = []
    result = sandbox.commands.run("echo oops >&2", on_stderr=seen.append)
    assert (result.stdout, result.stderr, result.exit_code) == ("", "oops\n", 0)
    assert "".join(seen) == "oops\n"


@pytest.mark.smoke
def test_a_nonzero_exit_raises_with_its_code_and_output(sandbox):
    with pytest.raises(CommandExitException) as raised:
        sandbox.commands.run("echo out; echo err >&2; exit 3")
    assert raised.value.exit_code == 3
    assert raised.value.stdout == "out\n"
    assert raised.value.stderr == "err\n"


def test_envs_and_cwd_are_per_command(sandbox, home):
    assert sandbox.files.make_dir(f"{home}/work dir") is True
    result = sandbox.commands.run(
        'echo "$GREETING"; pwd', envs={"GREETING": "hi there"}, cwd=f"{home}/work dir"
    )
    assert result.stdout == f"hi there\n{home}/work dir\n"
    # neither carries over to the next command, which starts at home
    result = sandbox.commands.run('echo "[$GREETING]"; pwd')
    assert result.stdout == f"[]\n{home}\n"


def test_sandbox_envs_reach_every_command(make_sandbox):
    sandbox = make_sandbox(envs={"SANDBOX_LEVEL": "set at create", "OTHER": "kept"})
    assert sandbox.commands.run('echo "$SANDBOX_LEVEL"').stdout == "set at create\n"
    assert (
        sandbox.commands.run("echo \"$SANDBOX_LEVEL\" \"$OTHER\"", background=True)
        .wait()
        .stdout
        == "set at create kept\n"
    )
    # a command's own envs win over the sandbox's
    overridden = sandbox.commands.run(
        'echo "$SANDBOX_LEVEL" "$OTHER"', envs={"SANDBOX_LEVEL": "per command"}
    )
    assert overridden.stdout == "per command kept\n"


def test_on_stdout_receives_output_as_it_is_printed(sandbox):
    chunks = []
    started = time.monotonic()
    result = sandbox.commands.run(
        "for i in 1 2 3 4; do echo line$i; sleep 0.5; done",
        on_stdout=lambda text: chunks.append((time.monotonic(), text)),
    )
    ended = time.monotonic()
    assert result.stdout == "line1\nline2\nline3\nline4\n"
    assert "".join(text for _, text in chunks) == result.stdout
    # The first line came while the command still slept (1.5 s before its
    # end), not all at once when it exited.
    first_at = chunks[0][0]
    assert ended - first_at >= 1.0, (started, chunks, ended)
    assert len(chunks) >= 2, chunks


def test_a_command_past_its_timeout_raises(sandbox):
    started = time.monotonic()
    with pytest.raises(TimeoutException):
        sandbox.commands.run("sleep 30; echo woke", timeout=2)
    assert time.monotonic() - started < 15
    # the sandbox goes on serving
    assert sandbox.commands.run("echo after").stdout == "after\n"


@pytest.mark.smoke
def test_a_background_command_is_listed_killed_and_waited_for(sandbox):
    handle = sandbox.commands.run("sleep 60", background=True)
    assert handle.pid > 0
    running = {p.pid: p for p in sandbox.commands.list()}
    assert handle.pid in running, running
    assert running[handle.pid].cmd == "/bin/bash"
    assert running[handle.pid].args == ["-l", "-c", "sleep 60"]

    assert sandbox.commands.kill(handle.pid) is True
    with pytest.raises(CommandExitException) as raised:
        handle.wait()
    assert raised.value.exit_code != 0
    wait_until(
        lambda: handle.pid not in [p.pid for p in sandbox.commands.list()],
        10,
        f"process {handle.pid} left the list",
    )
    assert sandbox.commands.kill(handle.pid) is False


def test_a_background_command_is_waited_for_with_its_output(sandbox):
    handle = sandbox.commands.run("echo started; sleep 0.3; echo done", background=True)
    result = handle.wait()
    assert (result.stdout, result.exit_code) == ("started\ndone\n", 0)


def test_send_stdin_reaches_a_running_cat(sandbox):
    handle = sandbox.commands.run("cat", background=True, stdin=True, timeout=30)
    try:
        sandbox.commands.send_stdin(handle.pid, "first line\n")
        echoed = ""
        for stdout, _, _ in handle:
            echoed += stdout or ""
            if "first line\n" in echoed:
                break
        assert echoed == "first line\n"
        handle.send_stdin(b"second \x01 line\n")
        for stdout, _, _ in handle:
            echoed += stdout or ""
            if "second" in echoed and echoed.endswith("\n"):
                break
        assert echoed == "first line\nsecond \x01 line\n"
    finally:
        handle.kill()


def test_close_stdin_ends_cat(sandbox):
    handle = sandbox.commands.run("cat; echo eof", background=True, stdin=True)
    handle.send_stdin("all of it\n")
    sandbox.commands.close_stdin(handle.pid)
    result = handle.wait()
    assert (result.stdout, result.exit_code) == ("all of it\neof\n", 0)


def test_a_pty_echoes_input_reports_its_size_and_resizes(sandbox):
    screen = bytearray()
    terminal = sandbox.pty.create(PtySize(rows=24, cols=80), timeout=60)

    def read_until(marker: bytes, seconds: float = 20):
        deadline = time.monotonic() + seconds
        for _, _, pty in terminal:
            screen.extend(pty or b"")
            if marker in screen:
                return
            assert time.monotonic() < deadline, bytes(screen)
        raise AssertionError(f"the terminal ended before {marker!r}: {bytes(screen)!r}")

    try:
        sandbox.pty.send_stdin(terminal.pid, b"stty size; echo tty-$((6*7))\n")
        read_until(b"tty-42")
        assert b"24 80" in screen, bytes(screen)
        sandbox.pty.resize(terminal.pid, PtySize(rows=40, cols=120))
        sandbox.pty.send_stdin(terminal.pid, b"stty size; echo resized-$((6*7))\n")
        read_until(b"resized-42")
        assert b"40 120" in screen, bytes(screen)
        # a terminal is a process of the sandbox like any other
        assert terminal.pid in [p.pid for p in sandbox.commands.list()]
    finally:
        assert sandbox.pty.kill(terminal.pid) is True


# --- files (envd /files and filesystem service) ------------------------------


def test_write_and_read_text(sandbox, home):
    text = "hello\nwörld ✓\n"
    written = sandbox.files.write(f"{home}/notes/a.txt", text)
    assert (written.name, written.path, written.type) == (
        "a.txt",
        f"{home}/notes/a.txt",
        FileType.FILE,
    )
    assert sandbox.files.read(f"{home}/notes/a.txt") == text
    # the file is really in the sandbox, as its commands see it
    assert sandbox.commands.run(f"cat {home}/notes/a.txt").stdout == text


@pytest.mark.smoke
def test_write_and_read_every_byte_value(sandbox, home):
    data = bytes(range(256)) * 3
    sandbox.files.write(f"{home}/bytes.bin", data)
    assert bytes(sandbox.files.read(f"{home}/bytes.bin", format="bytes")) == data
    assert sandbox.commands.run(f"wc -c < {home}/bytes.bin").stdout.strip() == "768"


def test_write_and_read_five_mib(sandbox, home):
    data = os.urandom(5 * MIB)
    sandbox.files.write(f"{home}/big.bin", data)
    assert sandbox.files.get_info(f"{home}/big.bin").size == 5 * MIB
    assert bytes(sandbox.files.read(f"{home}/big.bin", format="bytes")) == data


def test_relative_paths_resolve_against_home(sandbox, home):
    written = sandbox.files.write("relative.txt", "found\n")
    assert written.path == f"{home}/relative.txt"
    assert sandbox.commands.run("cat relative.txt").stdout == "found\n"
    assert sandbox.files.read(f"{home}/relative.txt") == "found\n"


@pytest.mark.smoke
def test_list_exists_make_dir_rename_remove(sandbox, home):
    d = f"{home}/tree"
    assert sandbox.files.make_dir(d) is True
    assert sandbox.files.make_dir(d) is False
    assert sandbox.files.make_dir(f"{d}/a/b/c") is True
    sandbox.files.write(f"{d}/one.txt", "1")
    sandbox.files.write(f"{d}/two.txt", "22")

    entries = sandbox.files.list(d)
    assert sorted((e.name, e.path, e.type) for e in entries) == [
        ("a", f"{d}/a", FileType.DIR),
        ("one.txt", f"{d}/one.txt", FileType.FILE),
        ("two.txt", f"{d}/two.txt", FileType.FILE),
    ]
    deep = sandbox.files.list(d, depth=3)
    assert sorted(e.path for e in deep) == [
        f"{d}/a",
        f"{d}/a/b",
        f"{d}/a/b/c",
        f"{d}/one.txt",
        f"{d}/two.txt",
    ]

    assert sandbox.files.exists(f"{d}/one.txt") is True
    assert sandbox.files.exists(f"{d}/a") is True
    assert sandbox.files.exists(f"{d}/none.txt") is False

    moved = sandbox.files.rename(f"{d}/one.txt", f"{d}/a/moved.txt")
    assert (moved.name, moved.path, moved.type) == (
        "moved.txt",
        f"{d}/a/moved.txt",
        FileType.FILE,
    )
    assert sandbox.files.exists(f"{d}/one.txt") is False
    assert sandbox.files.read(f"{d}/a/moved.txt") == "1"

    sandbox.files.remove(f"{d}/two.txt")
    assert sandbox.files.exists(f"{d}/two.txt") is False
    sandbox.files.remove(d)
    assert sandbox.files.exists(d) is False
    with pytest.raises(FileNotFoundException):
        sandbox.files.read(f"{d}/a/moved.txt")
    with pytest.raises(FileNotFoundException):
        sandbox.files.list(d)


def test_get_info_of_a_file_and_a_directory(sandbox, home):
    before = now()
    sandbox.files.write(f"{home}/info/five.txt", "12345")
    entry = sandbox.files.get_info(f"{home}/info/five.txt")
    assert (entry.name, entry.path, entry.type, entry.size) == (
        "five.txt",
        f"{home}/info/five.txt",
        FileType.FILE,
        5,
    )
    assert re.fullmatch(r"-[r-][w-][xsS-][r-][w-][xsS-][r-][w-][xtT-]", entry.permissions), entry
    # find, not stat: gVisor's release in Debian 12 fails coreutils' statx
    assert entry.mode & 0o777 == int(
        sandbox.commands.run(f"find {home}/info/five.txt -printf %m").stdout.strip(), 8
    )
    assert entry.owner and entry.group
    assert before - dt.timedelta(seconds=30) <= entry.modified_time <= now() + dt.timedelta(seconds=30)
    assert entry.symlink_target is None

    directory = sandbox.files.get_info(f"{home}/info")
    assert (directory.name, directory.type) == ("info", FileType.DIR)
    with pytest.raises(FileNotFoundException):
        sandbox.files.get_info(f"{home}/info/missing")


# --- isolation ---------------------------------------------------------------


def test_two_sandboxes_do_not_share_files(make_sandbox, home):
    first = make_sandbox()
    second = make_sandbox()
    path = f"{home}/mine.txt"
    first.files.write(path, "first's")
    assert second.files.exists(path) is False
    assert second.commands.run(f"test -e {path} && echo shared || echo absent").stdout == "absent\n"
    second.files.write(path, "second's")
    assert first.files.read(path) == "first's"
    assert second.files.read(path) == "second's"


def test_another_tenant_can_neither_see_nor_touch_a_sandbox(make_sandbox, tag, other_api_key):
    mine = make_sandbox(metadata={"suite": tag})
    theirs = make_sandbox(metadata={"suite": tag}, api_key=other_api_key)

    assert [s.sandbox_id for s in listed(SandboxQuery(metadata={"suite": tag}))] == [
        mine.sandbox_id
    ]
    assert [
        s.sandbox_id
        for s in listed(SandboxQuery(metadata={"suite": tag}), api_key=other_api_key)
    ] == [theirs.sandbox_id]

    with pytest.raises(SandboxNotFoundException):
        Sandbox.get_info(mine.sandbox_id, api_key=other_api_key)
    with pytest.raises(SandboxNotFoundException):
        Sandbox.connect(mine.sandbox_id, api_key=other_api_key)
    with pytest.raises(SandboxNotFoundException):
        Sandbox.set_timeout(mine.sandbox_id, 5, api_key=other_api_key)
    assert Sandbox.kill(mine.sandbox_id, api_key=other_api_key) is False
    assert mine.commands.run("echo untouched").stdout == "untouched\n"
    assert seconds_left(mine.sandbox_id) > 60


def test_envd_refuses_a_wrong_access_token(sandbox, home):
    """Knowing a sandbox's id is not enough to use it: envd wants the
    sandbox's access token (handed out by create and connect only)."""
    for token in ("not-the-token", None):
        headers = {"E2b-Sandbox-Id": sandbox.sandbox_id, "E2b-Sandbox-Port": "49983"}
        if token is not None:
            headers["X-Access-Token"] = token
        stranger = Sandbox(
            sandbox_id=sandbox.sandbox_id,
            sandbox_domain=None,
            envd_version=Version(sandbox.get_info().envd_version),
            envd_access_token=token,
            connection_config=ConnectionConfig(extra_sandbox_headers=headers),
        )
        with pytest.raises(AuthenticationException):
            stranger.commands.run("echo should not run")
        # The refused run above left its connection closing: the answer
        # said so, so this upload goes out on a fresh one and reads its 401.
        with pytest.raises(AuthenticationException):
            stranger.files.write(f"{home}/should-not-exist", "x")
        with pytest.raises(AuthenticationException):
            stranger.files.list(home)
    assert sandbox.files.exists(f"{home}/should-not-exist") is False


def test_envd_is_reached_by_host_name(sandbox, home):
    """E2B_DOMAIN routing: envd at `49983-<id>.<domain>`, no sandbox header."""
    sandbox.files.write(f"{home}/by-host.txt", "routed by host\n")
    host = f"49983-{sandbox.sandbox_id}.{os.environ['E2B_TEST_ENVD_DOMAIN']}"
    url = os.environ["E2B_SANDBOX_URL"].rstrip("/") + "/files"
    params = {"path": f"{home}/by-host.txt"}
    token = {"X-Access-Token": sandbox._envd_access_token}
    answer = httpx.get(url, params=params, headers={"Host": host, **token})
    assert (answer.status_code, answer.text) == (200, "routed by host\n")
    # the token is still checked, and it is this sandbox's
    assert httpx.get(url, params=params, headers={"Host": host}).status_code == 401
    other = make_other_host(sandbox.sandbox_id)
    assert httpx.get(url, params=params, headers={"Host": other, **token}).status_code == 401


def make_other_host(sandbox_id: str) -> str:
    """The host of a sandbox id that is not this one (its last digit changed)."""
    last = "0" if sandbox_id[-1] != "0" else "1"
    return f"49983-{sandbox_id[:-1]}{last}.{os.environ['E2B_TEST_ENVD_DOMAIN']}"


def test_a_wrong_api_key_is_refused():
    with pytest.raises(AuthenticationException):
        Sandbox.create(api_key="not-a-key-this-server-knows-0123456789", timeout=30)
    with pytest.raises(AuthenticationException):
        Sandbox.list(api_key="not-a-key-this-server-knows-0123456789").next_items()
