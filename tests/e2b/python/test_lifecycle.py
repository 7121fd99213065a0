"""The E2B SDK's lifecycle beyond create and kill: pause and resume, fork,
snapshots, metrics, logs, network updates and refreshes.

Routes the SDK's `Sandbox` class does not call (the legacy resume, the
unversioned connect, refreshes, logs, the metrics of several sandboxes) are
driven through the SDK's own generated REST client, so its models parse the
answers. Where Paddock does less than E2B the tests assert what Paddock
does, and say so:

- a pause keeps memory and processes only on the tiers that can save them
  (gVisor, microVM); native and docker sandboxes keep their files, and a
  pause asking for memory there is refused (409, which the SDK reports as
  "already paused": False);
- a fork or a sandbox made from a snapshot gets the files, not the
  processes;
- a running sandbox's network changes only from one allowlist to another.

The backend comes from Paddock's own API (`GET /v1/sandboxes/{id}`); on a
server that is not Paddock the E2B behaviour is expected instead, and the
network case (which reads Paddock's egress proxy) is skipped.
"""

import datetime as dt
import os
import time

import httpx
import pytest

from e2b import ConnectionConfig, Sandbox, SandboxException, SandboxNotFoundException, SandboxState
from e2b.api.client.api.sandboxes import (
    get_sandboxes_metrics,
    get_sandboxes_sandbox_id_logs,
    get_v_2_sandboxes_sandbox_id_logs,
    post_sandboxes_sandbox_id_connect,
    post_sandboxes_sandbox_id_refreshes,
    post_sandboxes_sandbox_id_resume,
)
from e2b.api.client.models import (
    ConnectSandbox,
    LogsDirection,
    ResumedSandbox,
    SandboxRefreshRequest,
)
from e2b.api.client_sync import get_api_client

MIB = 1024 * 1024
# Paddock's tiers that save a paused sandbox whole (service/sandboxes/pause.rs)
MEMORY_KEPT = {"gvisor", "microvm"}


def now() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc)


def seconds_left(sandbox_id: str) -> float:
    return (Sandbox.get_info(sandbox_id).end_at - now()).total_seconds()


def wait_until(condition, seconds: float, what: str):
    deadline = time.monotonic() + seconds
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {seconds} s: {what}")
        time.sleep(0.2)


def api(**options):
    """The SDK's REST client, as its Sandbox class builds it."""
    return get_api_client(ConnectionConfig(**options))


def paddock_view(sandbox_id: str):
    """The sandbox as Paddock's own API shows it, or None on a server that is not Paddock."""
    answer = httpx.get(
        os.environ["E2B_API_URL"].rstrip("/") + f"/v1/sandboxes/{sandbox_id}",
        headers={"Authorization": f"Bearer {os.environ['E2B_API_KEY']}"},
        timeout=30,
    )
    return answer.json() if answer.status_code == 200 else None


def paddock_backend(sandbox_id: str):
    view = paddock_view(sandbox_id)
    return view and view["backend"]


def keeps_memory(sandbox_id: str) -> bool:
    backend = paddock_backend(sandbox_id)
    return backend is None or backend in MEMORY_KEPT


def all_snapshots(**options) -> list:
    paginator = Sandbox.list_snapshots(**options)
    found = []
    while paginator.has_next:
        found.extend(paginator.next_items())
    return found


# A counter a detached process moves five times a second, written whole (a
# reader never sees it half-written, nor a pause keep it so). Detached, so
# that no output stream of the SDK's stays open across the pause: on gVisor
# a stream open while the sandbox is saved can lose the sandbox (reported).
COUNTER = (
    "setsid bash -c 'i=0; while true; do i=$((i+1)); echo $i > {home}/counter.tmp; "
    "mv {home}/counter.tmp {home}/counter; sleep 0.2; done' >/dev/null 2>&1 < /dev/null &"
)


def counter(sandbox: Sandbox, home: str) -> int:
    return int(sandbox.files.read(f"{home}/counter").strip())


# --- pause and resume --------------------------------------------------------


def test_pause_then_connect_keeps_files_and_what_the_tier_keeps_of_processes(
    make_sandbox, home
):
    # no network: gVisor cannot save a sandbox with network (runsc refuses
    # to checkpoint host networking), so it would keep only the files
    sandbox = make_sandbox(timeout=120, allow_internet_access=False)
    sandbox_id = sandbox.sandbox_id
    sandbox.files.write(f"{home}/kept.txt", "written before the pause\n")
    sandbox.commands.run(COUNTER.format(home=home))
    wait_until(lambda: sandbox.files.exists(f"{home}/counter"), 10, "the counter started")
    wait_until(lambda: counter(sandbox, home) >= 3, 10, "the counter moved")
    memory = keeps_memory(sandbox_id)
    if not memory:
        # a pause that must keep memory is refused here; the sandbox runs on
        assert sandbox.pause(keep_memory=True) is False
        assert Sandbox.get_info(sandbox_id).state == SandboxState.RUNNING
    before = counter(sandbox, home)

    assert sandbox.pause() is True
    assert Sandbox.get_info(sandbox_id).state == SandboxState.PAUSED
    view = paddock_view(sandbox_id)
    if view is not None:
        assert view["pause"]["processes_kept"] is memory, view["pause"]
    # a paused sandbox has no metrics to show
    assert Sandbox.get_metrics(sandbox_id) == []

    resumed = Sandbox.connect(sandbox_id, timeout=120)
    assert Sandbox.get_info(sandbox_id).state == SandboxState.RUNNING
    assert resumed.files.read(f"{home}/kept.txt") == "written before the pause\n"
    first = counter(resumed, home)
    assert first >= before
    time.sleep(1.0)
    later = counter(resumed, home)
    if memory:
        assert later > first, "the counting process was not kept by the pause"
    else:
        assert later == first, "a process ran on after a files-only pause"


def test_the_legacy_resume_brings_a_paused_sandbox_back(make_sandbox, home):
    sandbox = make_sandbox(timeout=120)
    sandbox_id = sandbox.sandbox_id
    sandbox.files.write(f"{home}/note.txt", "still here\n")
    assert sandbox.pause() is True

    answer = post_sandboxes_sandbox_id_resume.sync_detailed(
        sandbox_id, client=api(), body=ResumedSandbox(timeout=90)
    )
    assert answer.status_code == 201, answer.content
    assert answer.parsed.sandbox_id == sandbox_id
    assert answer.parsed.envd_access_token
    assert Sandbox.get_info(sandbox_id).state == SandboxState.RUNNING
    assert 80 <= seconds_left(sandbox_id) <= 95
    assert Sandbox.connect(sandbox_id).files.read(f"{home}/note.txt") == "still here\n"

    again = post_sandboxes_sandbox_id_resume.sync_detailed(
        sandbox_id, client=api(), body=ResumedSandbox(timeout=90)
    )
    assert again.status_code == 409, again.content
    gone = post_sandboxes_sandbox_id_resume.sync_detailed(
        "sb-00000000000000000000000000000000", client=api(), body=ResumedSandbox()
    )
    assert gone.status_code == 404, gone.content


def test_the_unversioned_connect_answers_the_running_sandbox(sandbox):
    answer = post_sandboxes_sandbox_id_connect.sync_detailed(
        sandbox.sandbox_id, client=api(), body=ConnectSandbox(timeout=400)
    )
    assert answer.status_code == 200, answer.content
    assert answer.parsed.sandbox_id == sandbox.sandbox_id
    assert 390 <= seconds_left(sandbox.sandbox_id) <= 405


def test_a_refresh_extends_the_life_and_never_shortens_it(make_sandbox):
    sandbox = make_sandbox(timeout=30)
    sandbox_id = sandbox.sandbox_id

    def refresh(sandbox_id, duration):
        return post_sandboxes_sandbox_id_refreshes.sync_detailed(
            sandbox_id, client=api(), body=SandboxRefreshRequest(duration=duration)
        ).status_code

    assert refresh(sandbox_id, 300) == 204
    assert 290 <= seconds_left(sandbox_id) <= 305
    assert refresh(sandbox_id, 20) == 204
    assert 280 <= seconds_left(sandbox_id) <= 305
    sandbox.kill()
    assert refresh(sandbox_id, 300) == 404


# --- fork and snapshots --------------------------------------------------------


def test_a_fork_starts_with_the_parents_files_and_then_goes_its_own_way(
    make_sandbox, home
):
    parent = make_sandbox(timeout=120)
    parent.files.write(f"{home}/from-parent.txt", "the parent's\n")
    forks = parent.fork(timeout=90, count=2)
    try:
        assert [type(f) for f in forks] == [Sandbox, Sandbox], forks
        ids = {f.sandbox_id for f in forks}
        assert len(ids) == 2 and parent.sandbox_id not in ids
        for fork in forks:
            assert fork.files.read(f"{home}/from-parent.txt") == "the parent's\n"
            assert 80 <= seconds_left(fork.sandbox_id) <= 95

        forks[0].files.write(f"{home}/from-fork.txt", "the first fork's\n")
        parent.files.write(f"{home}/after-fork.txt", "the parent's, later\n")
        assert parent.files.exists(f"{home}/from-fork.txt") is False
        assert forks[1].files.exists(f"{home}/from-fork.txt") is False
        assert forks[0].files.exists(f"{home}/after-fork.txt") is False
        forks[1].files.write(f"{home}/from-parent.txt", "overwritten in a fork\n")
        assert parent.files.read(f"{home}/from-parent.txt") == "the parent's\n"
        assert Sandbox.get_info(parent.sandbox_id).state == SandboxState.RUNNING
    finally:
        for fork in forks:
            if isinstance(fork, Sandbox):
                fork.kill()


def test_a_paused_sandbox_is_not_forked(sandbox):
    assert sandbox.pause() is True
    with pytest.raises(SandboxException) as raised:
        sandbox.fork(timeout=30)
    assert raised.value.status_code == 409


def test_a_snapshot_is_listed_restored_and_deleted(make_sandbox, home, other_api_key):
    source = make_sandbox(timeout=120)
    source.files.write(f"{home}/snap.txt", "in the snapshot\n")
    snapshot = source.create_snapshot()
    assert snapshot.snapshot_id
    assert snapshot.names == []
    source.files.write(f"{home}/snap.txt", "changed after the snapshot\n")

    mine = [s.snapshot_id for s in source.list_snapshots().next_items()]
    assert mine == [snapshot.snapshot_id]
    assert snapshot.snapshot_id in [s.snapshot_id for s in all_snapshots()]
    assert snapshot.snapshot_id not in [
        s.snapshot_id for s in all_snapshots(api_key=other_api_key)
    ]
    assert Sandbox.delete_snapshot(snapshot.snapshot_id, api_key=other_api_key) is False

    restored = make_sandbox(template=snapshot.snapshot_id, timeout=90)
    assert restored.sandbox_id != source.sandbox_id
    assert restored.files.read(f"{home}/snap.txt") == "in the snapshot\n"
    assert 80 <= seconds_left(restored.sandbox_id) <= 95

    assert Sandbox.delete_snapshot(snapshot.snapshot_id) is True
    assert Sandbox.delete_snapshot(snapshot.snapshot_id) is False
    assert snapshot.snapshot_id not in [s.snapshot_id for s in all_snapshots()]
    # the restored sandbox's files are its own
    assert restored.files.read(f"{home}/snap.txt") == "in the snapshot\n"


def test_a_memory_snapshot_is_refused_where_snapshots_keep_files(sandbox):
    if paddock_backend(sandbox.sandbox_id) is None:
        pytest.skip("E2B keeps memory in snapshots")
    with pytest.raises(SandboxException) as raised:
        sandbox.create_snapshot(mode="full")
    assert raised.value.status_code == 400


# --- metrics and logs ----------------------------------------------------------


def test_metrics_describe_the_running_sandbox(sandbox, home):
    [metric] = sandbox.get_metrics()
    assert abs((metric.timestamp - now()).total_seconds()) < 60
    assert metric.cpu_count >= 1
    assert 0 <= metric.cpu_used_pct <= 100
    assert 0 < metric.mem_used <= metric.mem_total
    assert metric.mem_cache >= 0
    assert 0 <= metric.disk_used <= metric.disk_total and metric.disk_total > 0

    spinner = sandbox.commands.run("while :; do :; done", background=True)
    try:
        busy = wait_until(
            lambda: [m for m in sandbox.get_metrics() if m.cpu_used_pct > 20],
            20,
            "a spinning process showed in cpuUsedPct",
        )
        assert busy[0].cpu_used_pct <= 100
    finally:
        spinner.kill()

    sandbox.files.write(f"{home}/eight.bin", os.urandom(8 * MIB))
    [after] = sandbox.get_metrics()
    assert after.disk_used >= 8 * MIB

    answer = get_sandboxes_metrics.sync_detailed(
        client=api(), sandbox_ids=[sandbox.sandbox_id, "sb-00000000000000000000000000000000"]
    )
    assert answer.status_code == 200, answer.content
    both = answer.parsed.sandboxes
    assert list(both) == [sandbox.sandbox_id]
    assert both[sandbox.sandbox_id]["memTotal"] > 0
    assert both[sandbox.sandbox_id]["cpuCount"] >= 1

    sandbox.kill()
    with pytest.raises(SandboxNotFoundException):
        Sandbox.get_metrics(sandbox.sandbox_id)


def probe(sandbox: Sandbox, host: str) -> str:
    """What Paddock's egress proxy answers a request to `host` (its status
    line and `X-Paddock-Egress` say whether the policy denied it). Through
    bash's /dev/tcp: the container images have no curl."""
    script = (
        "exec 3<>/dev/tcp/127.0.0.1/3128; "
        f'printf "GET http://{host}/ HTTP/1.0\\r\\nHost: {host}\\r\\n\\r\\n" >&3; '
        "timeout 10 cat <&3"
    )
    return sandbox.commands.run(script, timeout=30).stdout


def test_a_network_update_replaces_the_allowlist(make_sandbox):
    sandbox = make_sandbox(network={"allow_out": ["a.example.test"]})
    if paddock_backend(sandbox.sandbox_id) is None:
        pytest.skip("the probe reads Paddock's egress proxy")
    assert "X-Paddock-Egress: denied" in probe(sandbox, "b.example.test")
    # allowed, then not found (this host has no internet): not the policy's doing
    assert "X-Paddock-Egress: denied" not in probe(sandbox, "a.example.test")

    sandbox.update_network({"allow_out": ["b.example.test"]})
    denied = probe(sandbox, "a.example.test")
    assert denied.startswith("HTTP/1.1 403"), denied
    assert "X-Paddock-Egress: denied" in denied
    assert "X-Paddock-Egress: denied" not in probe(sandbox, "b.example.test")

    # a running sandbox keeps its allowlist's namespace: no "deny all"
    with pytest.raises(SandboxException) as raised:
        sandbox.update_network({"allow_internet_access": False})
    assert raised.value.status_code == 409
    # nor does Paddock's egress take E2B's DNS servers
    with pytest.raises(SandboxException) as raised:
        sandbox.update_network({"allow_out": ["b.example.test"], "dns_servers": ["1.1.1.1"]})
    assert raised.value.status_code == 400
    assert "X-Paddock-Egress: denied" in probe(sandbox, "a.example.test")

    # the change is in the sandbox's log, after its creation
    answer = get_v_2_sandboxes_sandbox_id_logs.sync_detailed(sandbox.sandbox_id, client=api())
    assert answer.status_code == 200, answer.content
    events = [entry.fields.additional_properties.get("event") for entry in answer.parsed.logs]
    assert events == ["created", "network.changed"]
    change = answer.parsed.logs[1]
    assert change.fields.additional_properties["old"] == "allow:a.example.test"
    assert change.fields.additional_properties["new"] == "allow:b.example.test"
    newest = get_v_2_sandboxes_sandbox_id_logs.sync_detailed(
        sandbox.sandbox_id, client=api(), direction=LogsDirection.BACKWARD, limit=1
    ).parsed.logs
    assert [e.message for e in newest] == [change.message]
    legacy = get_sandboxes_sandbox_id_logs.sync_detailed(sandbox.sandbox_id, client=api())
    assert legacy.status_code == 200, legacy.content
    assert [line.line for line in legacy.parsed.logs] == [
        e.message for e in answer.parsed.logs
    ]
    missing = get_v_2_sandboxes_sandbox_id_logs.sync_detailed(
        "sb-00000000000000000000000000000000", client=api()
    )
    assert missing.status_code == 404
