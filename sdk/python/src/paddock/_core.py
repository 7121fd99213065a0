"""What the sync and async clients share: requests as data, how each answer
is read, the stream items, and the state of a resumable stream. The
resources that use them are in ``_resources``.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from os import PathLike
from typing import IO, Any, Generic, TypeVar
from urllib.parse import quote, quote_from_bytes

import httpx
from pydantic import BaseModel

from . import models as m
from ._sse import ServerSentEvent
from .errors import PaddockError, error_from_event

T = TypeVar("T")
M = TypeVar("M", bound=BaseModel)

#: What an upload reads: the bytes, a file's path, or a binary file open for reading.
UploadSource = bytes | str | PathLike[str] | IO[bytes]
#: Where a download goes: a file's path (made or replaced) or a binary file open for writing.
DownloadTarget = str | PathLike[str] | IO[bytes]
#: A run's model: a spec (``"openai:gpt-4o"``), a ``ModelChoice``, or its JSON.
ModelSpec = str | m.ModelChoice | Mapping[str, Any]
#: A network policy: ``"none"``, ``"full"``, a list of allowed hosts, or its JSON.
NetworkSpec = str | Iterable[str] | Mapping[str, Any] | BaseModel

#: The states a run ends in.
FINISHED_RUN_STATES = frozenset({"completed", "cancelled", "failed", "interrupted"})


@dataclass
class Request:
    """One HTTP request of the API, its path already percent-encoded."""

    method: str
    path: str
    params: dict[str, Any] | None = None
    json: Any = None
    headers: dict[str, str] = field(default_factory=dict)


def _seg(value: str) -> str:
    """One path segment (an id, a name), percent-encoded."""
    return quote(str(value), safe="")


def file_path(path: str | bytes) -> str:
    """A workspace path for ``/files/{path}``: each segment percent-encoded
    (bytes name a path that is not UTF-8); an absolute path keeps its
    leading ``/`` as ``%2F``, which the server reads as a separator; ``.``
    and ``..`` reach the server as they are, which refuses an escape."""
    raw = path.encode("utf-8") if isinstance(path, str) else bytes(path)
    # `.` and `..` spelled out, or an HTTP client would resolve them away
    # before the server could refuse a path that leaves the workspace
    segments = [
        "%2E" * len(seg) if seg in (b".", b"..") else quote_from_bytes(seg, safe="")
        for seg in raw.lstrip(b"/").split(b"/")
    ]
    encoded = "/".join(segments)
    return "%2F" + encoded if raw.startswith(b"/") else encoded


def _params(**values: Any) -> dict[str, Any] | None:
    """Query parameters without the ones left out; booleans as the server reads them."""
    out: dict[str, Any] = {}
    for key, value in values.items():
        if value is None:
            continue
        out[key] = ("true" if value else "false") if isinstance(value, bool) else value
    return out or None


def body(schema: type[BaseModel], /, **fields: Any) -> dict[str, Any]:
    """The JSON of a request type from the fields given (None: left out),
    validated by the generated model; only the fields given are sent."""
    given = {k: v for k, v in fields.items() if v is not None}
    return schema.model_validate(given).model_dump(mode="json", exclude_unset=True, by_alias=True)


def model_choice(spec: ModelSpec) -> Any:
    """``"openai:gpt-4o"`` -> ``{"spec": ...}``; a ``ModelChoice`` or its JSON as it is."""
    if isinstance(spec, str):
        return {"spec": spec}
    return spec


def scripted(turns: Iterable[Mapping[str, Any]]) -> m.ModelChoice:
    """A scripted model of these turns, each ``{"text", "tool_calls": [{"name",
    "arguments"}]}`` (docs/api.md: for tests and demos)."""
    return m.ModelChoice(scripted={"turns": list(turns)})


def network_policy(network: NetworkSpec | None) -> Any:
    """``"none"``/``"full"`` as they are, a list of hosts as an allowlist."""
    if network is None or isinstance(network, (str, Mapping, BaseModel)):
        return network
    return {"allowlist": list(network)}


# --- reading answers ----------------------------------------------------------


def read_model(model: type[M]) -> Callable[[httpx.Response], M]:
    def read(response: httpx.Response) -> M:
        return model.model_validate_json(response.content)

    return read


def read_list(model: type[BaseModel], key: str) -> Callable[[httpx.Response], list[Any]]:
    def read(response: httpx.Response) -> list[Any]:
        return list(getattr(model.model_validate_json(response.content), key))

    return read


def read_nothing(response: httpx.Response) -> None:
    return None


def read_bytes(response: httpx.Response) -> bytes:
    return response.content


def read_json(response: httpx.Response) -> Any:
    return response.json()


# --- stream items ---------------------------------------------------------------


@dataclass(frozen=True)
class Event:
    """One event of a session's or a run's stream.

    ``id`` is its sequence number in the session (what a reconnect resumes
    after), None for a transient event (``model.delta``, ``tool.output``,
    ``store.waiting``: published live, never stored, never replayed).
    """

    id: int | None
    kind: str
    data: m.EventEnvelope

    @property
    def seq(self) -> int:
        return self.data.seq

    @property
    def run(self) -> str | None:
        return self.data.run

    @property
    def payload(self) -> Any:
        return self.data.payload

    @property
    def transient(self) -> bool:
        return self.id is None


@dataclass(frozen=True)
class ExecOutput:
    """Output of a streamed exec: ``stream`` is ``stdout`` or ``stderr``;
    ``data`` text, or bytes when the request asked ``output_encoding="base64"``."""

    stream: str
    data: str | bytes


@dataclass(frozen=True)
class ProcessOutput:
    """Output of a background process's stream: ``data`` from byte ``offset`` of
    its whole output, ``dropped`` bytes before it the buffer no longer held,
    ``next_offset`` where the next chunk starts (the stream's resume point)."""

    offset: int
    data: bytes
    dropped: int
    next_offset: int


#: The items of an exec stream.
ExecItem = m.ExecStarted | ExecOutput | m.ExitView
#: The items of a process stream.
ProcessItem = ProcessOutput | m.ExitView


def decode_event(sse: ServerSentEvent) -> Event:
    return Event(
        id=int(sse.id) if sse.id else None,
        kind=sse.event,
        data=m.EventEnvelope.model_validate_json(sse.data),
    )


def exec_decoder(encoding: str | None) -> Callable[[ServerSentEvent], ExecItem]:
    def decode(sse: ServerSentEvent) -> ExecItem:
        if sse.event == "started":
            return m.ExecStarted.model_validate_json(sse.data)
        if sse.event in ("stdout", "stderr"):
            data = json.loads(sse.data)["data"]
            if encoding == "base64":
                data = base64.b64decode(data)
            return ExecOutput(stream=sse.event, data=data)
        if sse.event == "exit":
            return m.ExitView.model_validate_json(sse.data)
        raise PaddockError(f"unexpected exec stream event {sse.event!r}", code="unknown")

    return decode


def decode_process(sse: ServerSentEvent) -> ProcessItem:
    if sse.event == "output":
        out = m.TerminalOutput.model_validate_json(sse.data)
        data = base64.b64decode(out.data_base64)
        next_offset = int(sse.id) if sse.id else out.offset + len(data)
        return ProcessOutput(
            offset=out.offset, data=data, dropped=out.dropped, next_offset=next_offset
        )
    if sse.event == "exit":
        return m.ExitView.model_validate_json(sse.data)
    raise PaddockError(f"unexpected process stream event {sse.event!r}", code="unknown")


class StreamState(Generic[T]):
    """A server-sent event stream that may be resumed: where it is, whether
    it ended, and whether a dropped connection is tried again.

    ``position`` is the last ``id`` received (or the starting point): a
    reconnect sends it as ``Last-Event-ID``, which the server resumes after
    (events: the sequence number; process output: the byte offset), so no
    event is lost or repeated. A connection that breaks (the body cut short,
    a read timeout, a refused connect) is opened again up to ``retries``
    times in a row; one that the server ends cleanly is the end. An
    ``error`` event ends the stream with its typed error.
    """

    def __init__(
        self,
        request: Callable[[int | None], Request],
        decode: Callable[[ServerSentEvent], T],
        position: int | None,
        *,
        resume: bool,
        retries: int,
        last_kinds: frozenset[str] = frozenset(),
    ) -> None:
        self._request = request
        self.decode = decode
        self.position = position
        self.resume = resume
        self.retries = retries
        self.failures = 0
        self.done = False
        self.connections = 0
        self.opened = False
        self._last_kinds = last_kinds

    def next_request(self) -> Request:
        self.connections += 1
        request = self._request(self.position)
        if self.connections > 1 and self.position is not None:
            request.headers["Last-Event-ID"] = str(self.position)
        return request

    def connected(self) -> None:
        """A connection was answered with the stream."""
        self.opened = True

    def accept(self, sse: ServerSentEvent) -> T:
        """The item of one event (raising an ``error`` event's error)."""
        if sse.event == "error":
            self.done = True
            raise error_from_event(sse.data)
        item = self.decode(sse)
        if sse.id:
            self.position = int(sse.id)
        self.failures = 0
        if sse.event in self._last_kinds:
            self.done = True
        return item

    def dropped(self, error: Exception) -> float:
        """A broken connection: the seconds to wait before the next one, or
        raises when it is not to be tried again."""
        from .errors import ConnectionFailed

        self.failures += 1
        if not self.opened:
            self.done = True
            raise ConnectionFailed(f"the stream could not be opened: {error}") from error
        if not self.resume or self.failures > self.retries:
            self.done = True
            raise ConnectionFailed(
                f"the stream broke ({self.failures} times in a row): {error}"
            ) from error
        return min(0.1 * 2 ** (self.failures - 1), 5.0)


def parse_error_answer(response: httpx.Response, content: bytes) -> PaddockError:
    from .errors import error_from_answer

    return error_from_answer(response.status_code, content, response.headers)
