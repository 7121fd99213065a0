"""Typed errors, read from the one error body of Paddock's API.

Every error the server answers is ``{"error": {"code", "message"}}`` with
an HTTP status (docs/api.md, "Errors"); a stream that fails midway ends
with an ``error`` event holding the same body. Each is raised as the
subclass of :class:`PaddockError` for its family, with the status, the
stable ``code`` (for programs) and the ``message`` (for people)::

    try:
        client.sandboxes.get("sb-gone")
    except paddock.NotFound as e:
        assert e.code == "sandbox_not_found"

An answer's class follows its status; an error event (which has no status
of its own) is classed by its code, from the table of docs/api.md.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any


class PaddockError(Exception):
    """An error of the Paddock API, or of reaching it.

    ``status`` is the HTTP status (None for an error event of a stream and
    for a server that could not be reached), ``code`` the API's stable code,
    ``message`` the server's words. ``retry_after`` is the seconds of a
    ``Retry-After`` header, when the answer had one.
    """

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        code: str = "unknown",
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.retry_after = retry_after

    def __str__(self) -> str:
        status = f"{self.status} " if self.status is not None else ""
        return f"{status}{self.code}: {self.message}"

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(status={self.status!r}, code={self.code!r}, "
            f"message={self.message!r})"
        )


class InvalidRequest(PaddockError):
    """400, 405, 415, 422: a field, id, path, body or media type the server refuses
    (``invalid_request``, ``invalid_id``, ``malformed_json``, ``path_escape``,
    ``model_not_allowed``, ``spawn_failed``, ...)."""


class Unauthorized(PaddockError):
    """401 ``unauthorized``: no valid bearer token."""


class Forbidden(PaddockError):
    """403: ``read_only``, ``permission_denied``, ``network_not_allowed``,
    ``secret_not_allowed``."""


class NotFound(PaddockError):
    """404: no such object for this tenant (``sandbox_not_found``,
    ``run_not_found``, ``file_not_found``, ...)."""


class Conflict(PaddockError):
    """409: the object's state refuses the request (``sandbox_not_running``,
    ``session_busy``, ``run_finished``, ``run_not_resumable``, ...)."""


class TooLarge(PaddockError):
    """413: ``payload_too_large``, ``too_large``, ``disk_quota_exceeded``."""


class RateLimited(PaddockError):
    """429: a cap or quota of the tenant or node (``too_many_sandboxes``,
    ``quota_exceeded``, ``too_many_streams``, ``steering_limit``, ...);
    ``retry_after`` says when to try again where the server said."""


class Timeout(PaddockError):
    """408 ``body_timeout``, 504 ``timeout``."""


class ServerError(PaddockError):
    """500 ``internal``/``guest_error``, 502 (the port routes)."""


class Unavailable(PaddockError):
    """503: ``sandbox_start_failed``, ``database_unavailable``,
    ``shutting_down``, ``agents_unavailable``, ``busy``, ..."""


class ConnectionFailed(PaddockError):
    """The server could not be reached, or the connection broke (no status)."""


_BY_STATUS: dict[int, type[PaddockError]] = {
    400: InvalidRequest,
    401: Unauthorized,
    403: Forbidden,
    404: NotFound,
    405: InvalidRequest,
    408: Timeout,
    409: Conflict,
    413: TooLarge,
    415: InvalidRequest,
    422: InvalidRequest,
    429: RateLimited,
    500: ServerError,
    502: ServerError,
    503: Unavailable,
    504: Timeout,
}

# Codes whose family is not the one their name gives away (for stream error
# events, which carry no status); docs/api.md's error table.
_BY_CODE: dict[str, type[PaddockError]] = {
    "unauthorized": Unauthorized,
    "read_only": Forbidden,
    "permission_denied": Forbidden,
    "network_not_allowed": Forbidden,
    "secret_not_allowed": Forbidden,
    "body_timeout": Timeout,
    "timeout": Timeout,
    "payload_too_large": TooLarge,
    "too_large": TooLarge,
    "disk_quota_exceeded": TooLarge,
    "too_many_sandboxes": RateLimited,
    "too_many_streams": RateLimited,
    "quota_exceeded": RateLimited,
    "queue_full": RateLimited,
    "steering_limit": RateLimited,
    "body_budget_exceeded": RateLimited,
    "internal": ServerError,
    "guest_error": ServerError,
    "port_not_listening": ServerError,
    "port_unreachable": ServerError,
    "sandbox_start_failed": Unavailable,
    "database_unavailable": Unavailable,
    "storage_full": Unavailable,
    "shutting_down": Unavailable,
    "agents_unavailable": Unavailable,
    "busy": Unavailable,
    "model_unavailable": InvalidRequest,
    "sandbox_not_running": Conflict,
    "already_exists": Conflict,
    "directory_not_empty": Conflict,
    "conflict": Conflict,
}


def _class_of_code(code: str) -> type[PaddockError]:
    if code in _BY_CODE:
        return _BY_CODE[code]
    if code.endswith("_not_found"):
        return NotFound
    if code.startswith("invalid_") or code.startswith("malformed_"):
        return InvalidRequest
    return PaddockError


def _detail(body: Any) -> tuple[str, str] | None:
    """``(code, message)`` of an error body, or None if it is not one."""
    if not isinstance(body, Mapping):
        return None
    error = body.get("error")
    if not isinstance(error, Mapping):
        return None
    code, message = error.get("code"), error.get("message")
    if not isinstance(code, str) or not isinstance(message, str):
        return None
    return code, message


def _retry_after(headers: Mapping[str, str] | None) -> float | None:
    if not headers:
        return None
    value = headers.get("retry-after")
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None


def error_from_answer(
    status: int, body: bytes, headers: Mapping[str, str] | None = None
) -> PaddockError:
    """The error an answer of ``status`` with ``body`` stands for.

    A body that is not the API's error body (a proxy's page, say) still
    gives the status's class, with code ``unknown`` and the start of the
    body as the message.
    """
    cls = _BY_STATUS.get(status)
    try:
        detail = _detail(json.loads(body))
    except ValueError:
        detail = None
    if detail is None:
        text = body[:500].decode("utf-8", "replace").strip()
        return (cls or PaddockError)(
            text or f"HTTP {status}",
            status=status,
            code="unknown",
            retry_after=_retry_after(headers),
        )
    code, message = detail
    if cls is None:
        cls = _class_of_code(code)
    return cls(message, status=status, code=code, retry_after=_retry_after(headers))


def error_from_event(data: str) -> PaddockError:
    """The error of a stream's ``error`` event (no status: classed by code)."""
    try:
        detail = _detail(json.loads(data))
    except ValueError:
        detail = None
    if detail is None:
        return PaddockError(f"the stream failed: {data[:500]}", code="unknown")
    code, message = detail
    return _class_of_code(code)(message, code=code)


__all__ = [
    "PaddockError",
    "InvalidRequest",
    "Unauthorized",
    "Forbidden",
    "NotFound",
    "Conflict",
    "TooLarge",
    "RateLimited",
    "Timeout",
    "ServerError",
    "Unavailable",
    "ConnectionFailed",
    "error_from_answer",
    "error_from_event",
]
