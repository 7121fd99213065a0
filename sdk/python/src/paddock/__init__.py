"""A client of Paddock's HTTP API (``paddock serve``).

::

    from paddock import Paddock

    with Paddock("http://127.0.0.1:7878", "TOKEN") as client:
        sandbox = client.sandboxes.create()
        print(client.sandboxes.exec(sandbox.id, ["echo", "hi"]).stdout)
        client.sandboxes.stop(sandbox.id)

The types are in :mod:`paddock.models` (generated from the OpenAPI
document); the errors in :mod:`paddock.errors`.
"""

from . import models
from ._async_client import AsyncPaddock, AsyncStream
from ._client import Paddock, Stream
from ._core import (
    FINISHED_RUN_STATES,
    Event,
    ExecOutput,
    ProcessOutput,
    scripted,
)
from ._sse import ServerSentEvent, SSEDecoder
from ._version import __version__
from .errors import (
    Conflict,
    ConnectionFailed,
    Forbidden,
    InvalidRequest,
    NotFound,
    PaddockError,
    RateLimited,
    ServerError,
    Timeout,
    TooLarge,
    Unauthorized,
    Unavailable,
)

__all__ = [
    "__version__",
    "AsyncPaddock",
    "AsyncStream",
    "Conflict",
    "ConnectionFailed",
    "Event",
    "ExecOutput",
    "FINISHED_RUN_STATES",
    "Forbidden",
    "InvalidRequest",
    "NotFound",
    "Paddock",
    "PaddockError",
    "ProcessOutput",
    "RateLimited",
    "SSEDecoder",
    "ServerError",
    "ServerSentEvent",
    "Stream",
    "Timeout",
    "TooLarge",
    "Unauthorized",
    "Unavailable",
    "models",
    "scripted",
]
