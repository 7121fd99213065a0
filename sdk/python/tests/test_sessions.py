"""Agent sessions and runs through the SDK, with a scripted model (the
inline `{"scripted": {"turns": [...]}}` spec): a run that completes, its
events read live and resumed after a dropped connection (by hand and by
the stream itself), steering, cancelling, resume's refusal, forks."""

from __future__ import annotations

import pytest

import paddock
from paddock import Event, Paddock, scripted
from paddock.models import RunView


def command(cmd: str, text: str = "working") -> dict:
    return {"text": text, "tool_calls": [{"name": "run_command", "arguments": {"command": cmd}}]}


def complete(summary: str = "done") -> dict:
    return {
        "text": "done",
        "tool_calls": [
            {
                "name": "complete_task",
                "arguments": {
                    "verdict": "met",
                    "summary": summary,
                    "evidence": ["the commands ran"],
                },
            }
        ],
    }


@pytest.fixture
def session(client: Paddock):
    workspace = client.workspaces.create("sdk-session")
    return client.sessions.create(workspace.id, title="sdk suite")


def stored(events: list[Event]) -> list[Event]:
    return [e for e in events if e.id is not None]


def test_a_scripted_run_completes_and_its_events_tell_how(client: Paddock, session) -> None:
    assert client.sessions.get(session.id).title == "sdk suite"
    model = scripted([command("echo hello > out.txt && cat out.txt"), complete("wrote out.txt")])
    run = client.sessions.runs.start(
        session.id, "write out.txt", model, success_criteria=["out.txt says hello"]
    )
    assert isinstance(run, RunView)
    assert run.session == session.id
    assert run.state in ("preparing", "queued", "planning", "acting")

    events = list(client.runs.events(run.id))
    kinds = [e.kind for e in stored(events)]
    assert kinds[0] == "run.started" and kinds[-1] == "run.finished"
    assert "tool.call" in kinds and "tool.result" in kinds
    calls = [e.payload for e in events if e.kind == "tool.call"]
    assert [(c["tool"], c["arguments"]) for c in calls] == [
        ("run_command", {"command": "echo hello > out.txt && cat out.txt"}),
        (
            "complete_task",
            {"verdict": "met", "summary": "wrote out.txt", "evidence": ["the commands ran"]},
        ),
    ]
    results = [e.payload for e in events if e.kind == "tool.result"]
    assert results[0]["call_id"] == calls[0]["call_id"]
    assert results[0]["content"].startswith("hello\n")
    assert all(e.run == run.id for e in stored(events))
    # transient events have no id and seq 0
    assert all(e.seq == 0 for e in events if e.transient)
    finished = events[-1].payload
    assert (finished["state"], finished["end_reason"]) == ("completed", "completed")

    done = client.runs.wait(run.id, timeout=60)
    assert (done.state, done.end_reason) == ("completed", "completed")
    # the criterion had no evidence of its own: the review cannot call it met
    assert done.review.verdict == "unsure"
    assert [(c.criterion, c.verdict) for c in done.review.criteria] == [
        ("out.txt says hello", "unsure")
    ]
    assert done.end_snapshot is not None
    assert [r.id for r in client.sessions.runs.list(session.id)] == [run.id]


def test_events_read_live_then_resumed_after_a_drop_lose_and_repeat_nothing(
    client: Paddock, session
) -> None:
    model = scripted(
        [
            command("echo one"),
            command("sleep 3; echo two"),
            command("echo three"),
            complete(),
        ]
    )
    run = client.sessions.runs.start(session.id, "count to three", model)

    # live: read until the long command starts, then drop the connection
    first: list[Event] = []
    stream = client.sessions.events(session.id)
    for event in stream:
        first.append(event)
        if event.kind == "tool.call" and "sleep 3" in event.payload["arguments"]["command"]:
            break
    stream.close()
    last_id = stream.position
    assert last_id == stored(first)[-1].id
    # the run was still going when the stream was dropped
    assert "run.finished" not in [e.kind for e in first]
    assert client.runs.get(run.id).state not in paddock.FINISHED_RUN_STATES

    # resumed after the last id: the rest, live, until the run finished
    rest = list(client.sessions.events(session.id, after=last_id, until="run_finished"))
    assert rest[-1].kind == "run.finished"
    ids = [e.id for e in stored(first)] + [e.id for e in stored(rest)]
    assert ids == list(range(1, len(ids) + 1)), ids
    assert stored(rest)[0].id == last_id + 1

    # the same as the whole log read back at once
    everything = list(client.sessions.events(session.id, until="caught_up"))
    assert [(e.id, e.kind) for e in everything] == [
        (e.id, e.kind) for e in stored(first) + stored(rest)
    ]
    outputs = [e.payload["content"] for e in everything if e.kind == "tool.result"]
    assert [o.split("\n")[0] for o in outputs] == ["one", "two", "three", "completion recorded"]


def test_an_event_stream_cut_by_the_network_resumes_by_itself(
    client: Paddock, session, cutting_proxy, token: str
) -> None:
    model = scripted([command("echo one"), command("sleep 1; echo two"), complete()])
    # the first connection is cut once it carried the first tool call
    proxy, proxy_url = cutting_proxy(b"event: tool.call")
    run = client.sessions.runs.start(session.id, "two commands", model)
    with Paddock(proxy_url, token) as through:
        stream = through.sessions.events(session.id, until="run_finished")
        events = list(stream)
    assert proxy.cuts == 1
    assert stream.connections == 2
    # the second connection resumed after the last id the first delivered
    resumed_after = int(proxy.connections[1].header("Last-Event-ID"))
    ids = [e.id for e in stored(events)]
    assert resumed_after in ids
    assert ids == list(range(1, len(ids) + 1)), ids
    assert events[-1].kind == "run.finished"
    assert events[-1].run == run.id


def test_a_run_is_steered(client: Paddock, session) -> None:
    model = scripted([command("sleep 2"), complete()])
    run = client.sessions.runs.start(session.id, "wait a little", model)
    steering = None
    kinds = []
    for event in client.runs.events(run.id):
        kinds.append(event.kind)
        if event.kind == "tool.call" and steering is None:
            steering = client.runs.steer(run.id, "use the v2 API instead")
        if event.kind == "user.message":
            assert event.payload["message"] == "use the v2 API instead"
            assert event.payload["steering_id"] == steering.id
    assert steering is not None
    assert (steering.id, steering.run, steering.text) == (1, run.id, "use the v2 API instead")
    assert "user.message" in kinds
    assert client.runs.get(run.id).state == "completed"

    with pytest.raises(paddock.Conflict) as refused:
        client.runs.steer(run.id, "too late")
    assert (refused.value.status, refused.value.code) == (409, "run_finished")


def test_a_run_is_cancelled(client: Paddock, session) -> None:
    model = scripted([command("sleep 60"), complete()])
    run = client.sessions.runs.start(session.id, "wait a long time", model)
    for event in client.runs.events(run.id):
        if event.kind == "tool.call":
            break
    cancelled = client.runs.cancel(run.id)
    assert (cancelled.state, cancelled.end_reason) == ("cancelled", "cancelled")
    events = list(client.runs.events(run.id))
    assert events[-1].kind == "run.finished"
    assert events[-1].payload["state"] == "cancelled"


def test_resume_is_refused_for_a_run_that_was_not_interrupted(client: Paddock, session) -> None:
    run = client.sessions.runs.start(session.id, "finish", scripted([complete()]))
    client.runs.wait(run.id, timeout=60)
    with pytest.raises(paddock.Conflict) as refused:
        client.runs.resume(run.id, scripted([complete()]))
    assert (refused.value.status, refused.value.code) == (409, "run_not_resumable")


def test_a_session_is_forked_with_the_workspace_its_run_left(
    client: Paddock, session, sandboxes
) -> None:
    model = scripted([command("echo forked > note.txt"), complete()])
    run = client.sessions.runs.start(session.id, "leave a note", model)
    client.runs.wait(run.id, timeout=60)

    fork = client.sessions.fork(session.id, at_run=run.id, title="the fork")
    assert (fork.forked_from, fork.forked_at_run, fork.title) == (session.id, run.id, "the fork")
    assert fork.workspace != session.workspace
    sandbox = sandboxes.create(workspace=fork.workspace)
    assert client.sandboxes.files.read_text(sandbox.id, "note.txt") == "forked\n"
    client.sandboxes.stop(sandbox.id)
    # a fork's events are its own
    assert list(client.sessions.events(fork.id, until="caught_up")) == []

    # the fork takes a run of its own
    second = client.sessions.runs.start(
        fork.id, "read the note", scripted([command("cat note.txt"), complete()])
    )
    assert client.runs.wait(second.id, timeout=60).state == "completed"
    assert [r.id for r in client.sessions.runs.list(fork.id)] == [second.id]

    archived = client.sessions.archive(fork.id)
    assert archived.status == "archived"
    with pytest.raises(paddock.Conflict) as refused:
        client.sessions.runs.start(fork.id, "more", scripted([complete()]))
    assert refused.value.code == "session_archived"


def test_a_runs_checkpoints_diff_and_rewind(client: Paddock, session) -> None:
    model = scripted([command("echo v1 > f.txt"), command("echo v2 > f.txt"), complete()])
    run = client.sessions.runs.start(session.id, "write twice", model)
    client.runs.wait(run.id, timeout=60)
    checkpoints = client.sessions.checkpoints(session.id)
    assert [c.reason for c in checkpoints] == ["run_start", "tool_batch", "tool_batch"]
    start, first, second = checkpoints
    diff = client.sessions.diff(session.id, from_=first.id, to=second.id)
    [change] = diff.changes
    assert (change.path, change.change) == ("f.txt", "changed")
    assert "-v1" in change.patch and "+v2" in change.patch

    rewind = client.sessions.rewind(session.id, first.id)
    assert rewind.to == first.id
    assert rewind.safety_checkpoint is not None
    now = client.sessions.diff(session.id, from_=first.id)
    assert now.changes == []


def test_a_second_run_in_a_busy_session_is_refused(client: Paddock, session) -> None:
    run = client.sessions.runs.start(
        session.id, "wait", scripted([command("sleep 60"), complete()])
    )
    try:
        with pytest.raises(paddock.Conflict) as refused:
            client.sessions.runs.start(session.id, "another", scripted([complete()]))
        assert refused.value.code == "session_busy"
    finally:
        client.runs.cancel(run.id)
