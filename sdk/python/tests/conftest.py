"""The SDK's suite runs against a live `paddock serve`: PADDOCK_URL and
PADDOCK_TOKEN name it (tests/tests/scenarios/sdk_python.rs starts one and
runs this suite with the SDK installed from its wheel). Without them the
suite fails at once: it has nothing to test against.
"""

from __future__ import annotations

import os
import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest

from paddock import Paddock


def _env(name: str) -> str:
    value = os.environ.get(name, "")
    if not value:
        raise pytest.UsageError(
            f"{name} is not set: run this suite against a `paddock serve` "
            "(PADDOCK_URL, PADDOCK_TOKEN)"
        )
    return value


@pytest.fixture(scope="session")
def url() -> str:
    return _env("PADDOCK_URL").rstrip("/")


@pytest.fixture(scope="session")
def token() -> str:
    return _env("PADDOCK_TOKEN")


@pytest.fixture
def client(url: str, token: str) -> Iterator[Paddock]:
    with Paddock(url, token) as client:
        yield client


class Sandboxes:
    """Makes sandboxes through the client and stops every one at the end."""

    def __init__(self, client: Paddock) -> None:
        self.client = client
        self.ids: list[str] = []

    def create(self, **fields):
        sandbox = self.client.sandboxes.create(**fields)
        self.ids.append(sandbox.id)
        return sandbox

    def adopt(self, sandboxes):
        self.ids.extend(s.id for s in sandboxes)
        return sandboxes

    def stop_all(self) -> None:
        for id in self.ids:
            try:
                self.client.sandboxes.stop(id)
            except Exception:
                pass


@pytest.fixture
def sandboxes(client: Paddock) -> Iterator[Sandboxes]:
    made = Sandboxes(client)
    yield made
    made.stop_all()


@dataclass
class Connection:
    """What a proxied connection carried from the client: its request head."""

    head: bytes = b""

    def header(self, name: str) -> str | None:
        for line in self.head.decode("latin-1").split("\r\n")[1:]:
            key, _, value = line.partition(":")
            if key.strip().lower() == name.lower():
                return value.strip()
        return None

    @property
    def request_line(self) -> str:
        return self.head.decode("latin-1").split("\r\n", 1)[0]


@dataclass
class CuttingProxy:
    """A TCP proxy in front of the server that cuts the first connection
    whose answer carries ``cut_after`` (a byte string), right after passing
    that data on, as a network failure would: the client sees the body end
    short. Every other connection is passed through whole."""

    target: tuple[str, int]
    cut_after: bytes
    connections: list[Connection] = field(default_factory=list)
    cuts: int = 0

    def start(self) -> str:
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._stopping = False
        threading.Thread(target=self._accept, daemon=True).start()
        host, port = self._listener.getsockname()
        return f"http://{host}:{port}"

    def stop(self) -> None:
        self._stopping = True
        self._listener.close()

    def _accept(self) -> None:
        while not self._stopping:
            try:
                downstream, _ = self._listener.accept()
            except OSError:
                return
            upstream = socket.create_connection(self.target)
            connection = Connection()
            self.connections.append(connection)
            threading.Thread(
                target=self._up, args=(downstream, upstream, connection), daemon=True
            ).start()
            threading.Thread(target=self._down, args=(upstream, downstream), daemon=True).start()

    def _up(self, downstream: socket.socket, upstream: socket.socket, conn: Connection) -> None:
        try:
            while data := downstream.recv(65536):
                if b"\r\n\r\n" not in conn.head:
                    conn.head += data
                upstream.sendall(data)
        except OSError:
            pass
        finally:
            _close(upstream)

    def _down(self, upstream: socket.socket, downstream: socket.socket) -> None:
        seen = b""
        try:
            while data := upstream.recv(65536):
                downstream.sendall(data)
                seen = (seen + data)[-4096:]
                if self.cuts == 0 and self.cut_after in seen:
                    self.cuts += 1
                    break
        except OSError:
            pass
        finally:
            _close(downstream)
            _close(upstream)


def _close(sock: socket.socket) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    sock.close()


@pytest.fixture
def cutting_proxy(url: str):
    """``start(cut_after)`` -> (proxy, its URL), stopped at the end."""
    proxies: list[CuttingProxy] = []
    hostport = url.split("://", 1)[1].split("/", 1)[0]
    host, _, port = hostport.rpartition(":")

    def start(cut_after: bytes) -> tuple[CuttingProxy, str]:
        proxy = CuttingProxy((host, int(port)), cut_after)
        proxies.append(proxy)
        return proxy, proxy.start()

    yield start
    for proxy in proxies:
        proxy.stop()
