"""The synchronous client: :class:`Paddock`."""

from __future__ import annotations

import os
import time
from collections import deque
from collections.abc import Callable, Iterator
from typing import IO, Any, Generic, TypeVar

import httpx

from . import models as m
from ._core import (
    DownloadTarget,
    Request,
    StreamState,
    UploadSource,
    parse_error_answer,
    read_json,
    read_model,
)
from ._resources import Resources
from ._sse import SSEDecoder
from ._version import __version__
from .errors import ConnectionFailed

T = TypeVar("T")

#: A stream waits this long for its next bytes: past the server's 15 s
#: keep-alive comments, so a silent connection is a dead one.
STREAM_READ_TIMEOUT = 60.0
_CHUNK = 1 << 16


def _timeouts(timeout: float | httpx.Timeout | None) -> httpx.Timeout:
    if isinstance(timeout, httpx.Timeout):
        return timeout
    return httpx.Timeout(timeout)


def _stream_timeouts(timeout: httpx.Timeout) -> httpx.Timeout:
    return httpx.Timeout(
        connect=timeout.connect,
        read=STREAM_READ_TIMEOUT,
        write=timeout.write,
        pool=timeout.pool,
    )


def headers_for(token: str | None) -> dict[str, str]:
    headers = {"User-Agent": f"paddock-sdk-python/{__version__}"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    return headers


class Stream(Generic[T]):
    """A server-sent event stream as an iterator (a context manager too:
    leaving it closes the connection). ``position`` is the last id
    received, the ``after`` to resume from later; ``connections`` counts
    the connections it took."""

    def __init__(self, http: httpx.Client, timeout: httpx.Timeout, state: StreamState[T]):
        self._http = http
        self._timeout = _stream_timeouts(timeout)
        self._state = state
        self._response: httpx.Response | None = None
        self._chunks: Iterator[bytes] | None = None
        self._decoder = SSEDecoder()
        self._pending: deque[T] = deque()

    @property
    def position(self) -> int | None:
        return self._state.position

    @property
    def connections(self) -> int:
        return self._state.connections

    def __iter__(self) -> Stream[T]:
        return self

    def __next__(self) -> T:
        while True:
            if self._pending:
                return self._pending.popleft()
            if self._state.done:
                self.close()
                raise StopIteration
            if self._chunks is None:
                self._open()
                continue
            try:
                chunk = next(self._chunks)
            except StopIteration:
                # the server ended the stream: the end, never a reconnect
                self._state.done = True
                continue
            except httpx.TransportError as error:
                self._disconnect()
                time.sleep(self._state.dropped(error))
                continue
            for sse in self._decoder.feed(chunk):
                self._pending.append(self._state.accept(sse))
                if self._state.done:
                    break

    def _open(self) -> None:
        request = self._state.next_request()
        try:
            built = self._http.build_request(
                request.method,
                request.path,
                params=request.params,
                json=request.json,
                headers=request.headers,
                timeout=self._timeout,
            )
            response = self._http.send(built, stream=True)
        except httpx.TransportError as error:
            time.sleep(self._state.dropped(error))
            return
        if response.status_code >= 400:
            content = response.read()
            response.close()
            self._state.done = True
            raise parse_error_answer(response, content)
        self._state.connected()
        self._response = response
        self._chunks = response.iter_bytes()
        self._decoder = SSEDecoder()

    def _disconnect(self) -> None:
        if self._response is not None:
            self._response.close()
        self._response, self._chunks = None, None

    def close(self) -> None:
        """Closes the connection (as a dropped one, without resuming)."""
        self._state.done = True
        self._disconnect()

    def __enter__(self) -> Stream[T]:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class SyncTransport:
    """Sends the resources' requests with one ``httpx.Client``."""

    def __init__(self, http: httpx.Client, timeout: httpx.Timeout) -> None:
        self.http = http
        self.timeout = timeout

    def _send(self, request: Request, content: Any = None, stream: bool = False) -> httpx.Response:
        try:
            built = self.http.build_request(
                request.method,
                request.path,
                params=request.params,
                json=request.json,
                content=content,
                headers=request.headers,
            )
            response = self.http.send(built, stream=stream)
        except httpx.TransportError as error:
            raise ConnectionFailed(f"{request.method} {request.path}: {error}") from error
        if response.status_code >= 400:
            content = response.read()
            response.close()
            raise parse_error_answer(response, content)
        return response

    def call(self, request: Request, read: Callable[[httpx.Response], T]) -> T:
        return read(self._send(request))

    def call_content(
        self, request: Request, source: UploadSource, read: Callable[[httpx.Response], T]
    ) -> T:
        if isinstance(source, (bytes, bytearray, memoryview)):
            return read(self._send(request, bytes(source)))
        if isinstance(source, (str, os.PathLike)):
            with open(source, "rb") as file:
                return read(self._send(request, _chunks_of(file)))
        return read(self._send(request, _chunks_of(source)))

    def download(self, request: Request, dest: DownloadTarget) -> int:
        response = self._send(request, stream=True)
        try:
            if isinstance(dest, (str, os.PathLike)):
                with open(dest, "wb") as file:
                    return _copy(response, file)
            return _copy(response, dest)
        except httpx.TransportError as error:
            raise ConnectionFailed(f"{request.method} {request.path}: {error}") from error
        finally:
            response.close()

    def stream(self, state: StreamState[T]) -> Stream[T]:
        return Stream(self.http, self.timeout, state)

    def then(self, value: T, fn: Callable[[T], Any]) -> Any:
        return fn(value)

    def poll(
        self,
        fetch: Callable[[], T],
        done: Callable[[T], bool],
        timeout: float | None,
        interval: float,
        what: str,
    ) -> T:
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            value = fetch()
            if done(value):
                return value
            if deadline is not None and time.monotonic() >= deadline:
                raise TimeoutError(f"{what} within {timeout} s")
            time.sleep(interval)


def _chunks_of(file: IO[bytes]) -> Iterator[bytes]:
    while chunk := file.read(_CHUNK):
        yield chunk


def _copy(response: httpx.Response, file: IO[bytes]) -> int:
    written = 0
    for chunk in response.iter_bytes():
        file.write(chunk)
        written += len(chunk)
    return written


class Paddock(Resources):
    """A client of one Paddock server (``paddock serve``) for one tenant's token.

    ::

        from paddock import Paddock

        with Paddock("http://127.0.0.1:7878", token) as client:
            sandbox = client.sandboxes.create()
            print(client.sandboxes.exec(sandbox.id, ["uname", "-a"]).stdout)

    ``base_url`` and ``token`` default to ``PADDOCK_URL`` and
    ``PADDOCK_TOKEN``. ``timeout`` bounds each request (seconds; a stream
    waits up to 60 s between bytes); ``http_client`` replaces the
    ``httpx.Client`` made here (its base URL and headers are then its own).
    Failures raise :class:`paddock.PaddockError` subclasses.
    """

    def __init__(
        self,
        base_url: str | None = None,
        token: str | None = None,
        *,
        timeout: float | httpx.Timeout | None = 300.0,
        http_client: httpx.Client | None = None,
    ) -> None:
        base_url = base_url or os.environ.get("PADDOCK_URL")
        token = token if token is not None else os.environ.get("PADDOCK_TOKEN")
        if http_client is None and not base_url:
            raise ValueError("Paddock: no base_url (nor PADDOCK_URL)")
        self._timeout = _timeouts(timeout)
        self._owns_http = http_client is None
        self.http = http_client or httpx.Client(
            base_url=base_url.rstrip("/") if base_url else "",
            headers=headers_for(token),
            timeout=self._timeout,
        )
        self._transport = SyncTransport(self.http, self._timeout)
        super().__init__(self._transport)

    def health(self) -> m.HealthView:
        """The server's health (with the caller's tenant's view when the token is valid)."""
        return self._transport.call(Request("GET", "/v1/health"), read_model(m.HealthView))

    def openapi(self) -> dict[str, Any]:
        """The server's OpenAPI document."""
        return self._transport.call(Request("GET", "/v1/openapi.json"), read_json)

    def close(self) -> None:
        if self._owns_http:
            self.http.close()

    def __enter__(self) -> Paddock:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
