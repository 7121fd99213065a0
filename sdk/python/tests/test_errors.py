"""Typed errors from the API's error body: the class of the status's family,
with the status, the stable code and the server's message."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

import paddock
from paddock import Paddock


def test_an_unknown_sandbox_is_not_found_with_its_code(client: Paddock) -> None:
    with pytest.raises(paddock.NotFound) as caught:
        client.sandboxes.get("sb-00000000000000000000000000000000")
    error = caught.value
    assert isinstance(error, paddock.PaddockError)
    assert (error.status, error.code) == (404, "sandbox_not_found")
    assert "sb-00000000000000000000000000000000" in error.message
    assert str(error) == f"404 sandbox_not_found: {error.message}"


def test_each_family_has_its_class(client: Paddock, url: str) -> None:
    with pytest.raises(paddock.NotFound) as run:
        client.runs.get("run_00000000000000000000000000000000")
    assert run.value.code == "run_not_found"

    with pytest.raises(paddock.InvalidRequest) as bad_id:
        client.sessions.get("not-a-session-id")
    assert (bad_id.value.status, bad_id.value.code) == (400, "invalid_id")

    with pytest.raises(paddock.InvalidRequest) as refused_model:
        workspace = client.workspaces.create("sdk-errors")
        session = client.sessions.create(workspace.id)
        client.sessions.runs.start(session.id, "anything", "scripted:/etc/passwd")
    assert (refused_model.value.status, refused_model.value.code) == (400, "model_not_allowed")

    with Paddock(url, "a-token-the-server-never-issued") as stranger:
        with pytest.raises(paddock.Unauthorized) as unauthorized:
            stranger.sandboxes.list()
    assert (unauthorized.value.status, unauthorized.value.code) == (401, "unauthorized")


def test_a_write_in_a_read_only_sandbox_is_forbidden(client: Paddock, sandboxes) -> None:
    sandbox = sandboxes.create(read_only=True)
    with pytest.raises(paddock.Forbidden) as refused:
        client.sandboxes.files.write(sandbox.id, "x.txt", "no")
    assert (refused.value.status, refused.value.code) == (403, "read_only")
    # an empty allowlist, which no backend can apply, is the caller's error
    with pytest.raises(paddock.InvalidRequest) as empty:
        sandboxes.create(network=[])
    assert empty.value.status == 400


def test_a_request_type_refuses_unknown_fields_before_sending(client: Paddock) -> None:
    with pytest.raises(ValidationError):
        client.sandboxes.create(netwrok="none")


def test_an_unreachable_server_is_a_connection_failure() -> None:
    with Paddock("http://127.0.0.1:9", "t" * 16, timeout=5) as nowhere:
        with pytest.raises(paddock.ConnectionFailed) as caught:
            nowhere.sandboxes.list()
    assert caught.value.status is None


def test_the_error_body_is_read_whatever_the_status() -> None:
    error = paddock.errors.error_from_answer(
        429,
        b'{"error": {"code": "too_many_streams", "message": "cap of 256"}}',
        {"retry-after": "1"},
    )
    assert isinstance(error, paddock.RateLimited)
    assert (error.code, error.message, error.retry_after) == ("too_many_streams", "cap of 256", 1.0)
    # a stream's error event has no status: classed by its code
    event = paddock.errors.error_from_event(
        '{"error": {"code": "sandbox_not_found", "message": "gone"}}'
    )
    assert isinstance(event, paddock.NotFound) and event.status is None
    # a body that is not the API's still gives the status's class
    proxy = paddock.errors.error_from_answer(502, b"<html>bad gateway</html>")
    assert isinstance(proxy, paddock.ServerError)
    assert (proxy.code, proxy.message) == ("unknown", "<html>bad gateway</html>")
