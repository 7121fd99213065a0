"""The asyncio client: :class:`AsyncPaddock`, the same resources and methods
as :class:`paddock.Paddock`, each awaited (streams: ``async for``)."""

from __future__ import annotations

import asyncio
import os
import time
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import IO, Any, Generic, TypeVar

import httpx

from . import models as m
from ._client import _stream_timeouts, _timeouts, headers_for
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
from .errors import ConnectionFailed

T = TypeVar("T")
_CHUNK = 1 << 16


class AsyncStream(Generic[T]):
    """A server-sent event stream as an async iterator (and ``async with``);
    resumed as :class:`paddock.Stream` is."""

    def __init__(self, http: httpx.AsyncClient, timeout: httpx.Timeout, state: StreamState[T]):
        self._http = http
        self._timeout = _stream_timeouts(timeout)
        self._state = state
        self._response: httpx.Response | None = None
        self._chunks: AsyncIterator[bytes] | None = None
        self._decoder = SSEDecoder()
        self._pending: deque[T] = deque()

    @property
    def position(self) -> int | None:
        return self._state.position

    @property
    def connections(self) -> int:
        return self._state.connections

    def __aiter__(self) -> AsyncStream[T]:
        return self

    async def __anext__(self) -> T:
        while True:
            if self._pending:
                return self._pending.popleft()
            if self._state.done:
                await self.aclose()
                raise StopAsyncIteration
            if self._chunks is None:
                await self._open()
                continue
            try:
                chunk = await self._chunks.__anext__()
            except StopAsyncIteration:
                self._state.done = True
                continue
            except httpx.TransportError as error:
                await self._disconnect()
                await asyncio.sleep(self._state.dropped(error))
                continue
            for sse in self._decoder.feed(chunk):
                self._pending.append(self._state.accept(sse))
                if self._state.done:
                    break

    async def _open(self) -> None:
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
            response = await self._http.send(built, stream=True)
        except httpx.TransportError as error:
            await asyncio.sleep(self._state.dropped(error))
            return
        if response.status_code >= 400:
            content = await response.aread()
            await response.aclose()
            self._state.done = True
            raise parse_error_answer(response, content)
        self._state.connected()
        self._response = response
        self._chunks = response.aiter_bytes()
        self._decoder = SSEDecoder()

    async def _disconnect(self) -> None:
        if self._response is not None:
            await self._response.aclose()
        self._response, self._chunks = None, None

    async def aclose(self) -> None:
        self._state.done = True
        await self._disconnect()

    async def __aenter__(self) -> AsyncStream[T]:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


class AsyncTransport:
    def __init__(self, http: httpx.AsyncClient, timeout: httpx.Timeout) -> None:
        self.http = http
        self.timeout = timeout

    async def _send(
        self, request: Request, content: Any = None, stream: bool = False
    ) -> httpx.Response:
        try:
            built = self.http.build_request(
                request.method,
                request.path,
                params=request.params,
                json=request.json,
                content=content,
                headers=request.headers,
            )
            response = await self.http.send(built, stream=stream)
        except httpx.TransportError as error:
            raise ConnectionFailed(f"{request.method} {request.path}: {error}") from error
        if response.status_code >= 400:
            content = await response.aread()
            await response.aclose()
            raise parse_error_answer(response, content)
        return response

    async def call(self, request: Request, read: Callable[[httpx.Response], T]) -> T:
        return read(await self._send(request))

    async def call_content(
        self, request: Request, source: UploadSource, read: Callable[[httpx.Response], T]
    ) -> T:
        if isinstance(source, (bytes, bytearray, memoryview)):
            return read(await self._send(request, bytes(source)))
        if isinstance(source, (str, os.PathLike)):
            file = await asyncio.to_thread(open, source, "rb")
            try:
                return read(await self._send(request, _chunks_of(file)))
            finally:
                file.close()
        return read(await self._send(request, _chunks_of(source)))

    async def download(self, request: Request, dest: DownloadTarget) -> int:
        response = await self._send(request, stream=True)
        try:
            if isinstance(dest, (str, os.PathLike)):
                file = await asyncio.to_thread(open, dest, "wb")
                try:
                    return await _copy(response, file)
                finally:
                    file.close()
            return await _copy(response, dest)
        except httpx.TransportError as error:
            raise ConnectionFailed(f"{request.method} {request.path}: {error}") from error
        finally:
            await response.aclose()

    def stream(self, state: StreamState[T]) -> AsyncStream[T]:
        return AsyncStream(self.http, self.timeout, state)

    async def then(self, value: Awaitable[T], fn: Callable[[T], Any]) -> Any:
        return fn(await value)

    async def poll(
        self,
        fetch: Callable[[], Awaitable[T]],
        done: Callable[[T], bool],
        timeout: float | None,
        interval: float,
        what: str,
    ) -> T:
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            value = await fetch()
            if done(value):
                return value
            if deadline is not None and time.monotonic() >= deadline:
                raise TimeoutError(f"{what} within {timeout} s")
            await asyncio.sleep(interval)


async def _chunks_of(file: IO[bytes]) -> AsyncIterator[bytes]:
    while chunk := await asyncio.to_thread(file.read, _CHUNK):
        yield chunk


async def _copy(response: httpx.Response, file: IO[bytes]) -> int:
    written = 0
    async for chunk in response.aiter_bytes():
        await asyncio.to_thread(file.write, chunk)
        written += len(chunk)
    return written


class AsyncPaddock(Resources):
    """:class:`paddock.Paddock` for asyncio: every method is awaited, every
    stream is iterated with ``async for``::

        async with AsyncPaddock(url, token) as client:
            sandbox = await client.sandboxes.create()
            result = await client.sandboxes.exec(sandbox.id, ["true"])
    """

    def __init__(
        self,
        base_url: str | None = None,
        token: str | None = None,
        *,
        timeout: float | httpx.Timeout | None = 300.0,
        http_client: httpx.AsyncClient | None = None,
    ) -> None:
        base_url = base_url or os.environ.get("PADDOCK_URL")
        token = token if token is not None else os.environ.get("PADDOCK_TOKEN")
        if http_client is None and not base_url:
            raise ValueError("AsyncPaddock: no base_url (nor PADDOCK_URL)")
        self._timeout = _timeouts(timeout)
        self._owns_http = http_client is None
        self.http = http_client or httpx.AsyncClient(
            base_url=base_url.rstrip("/") if base_url else "",
            headers=headers_for(token),
            timeout=self._timeout,
        )
        self._transport = AsyncTransport(self.http, self._timeout)
        super().__init__(self._transport)

    async def health(self) -> m.HealthView:
        return await self._transport.call(Request("GET", "/v1/health"), read_model(m.HealthView))

    async def openapi(self) -> dict[str, Any]:
        return await self._transport.call(Request("GET", "/v1/openapi.json"), read_json)

    async def aclose(self) -> None:
        if self._owns_http:
            await self.http.aclose()

    async def __aenter__(self) -> AsyncPaddock:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
