"""A decoder of server-sent events (the WHATWG framing), fed bytes as they come.

Lines end with LF, CRLF or CR; ``field: value`` lines build an event and a
blank line ends it; ``:`` lines are comments (the server's keep-alive); an
event without ``data`` is not dispatched. Unlike a browser's, the decoder
reports the ``id`` an event itself carried (None when it had none), so a
transient event of Paddock's (no ``id``) never looks like a resume point.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ServerSentEvent:
    """One event as framed: its name (``message`` when none was given), its
    data (lines joined by newlines), its own ``id`` or None, and ``retry``."""

    event: str
    data: str
    id: str | None = None
    retry: int | None = None


class SSEDecoder:
    """Turns a byte stream into :class:`ServerSentEvent` values."""

    def __init__(self) -> None:
        self._buffer = b""
        self._skip_lf = False
        self._event: str | None = None
        self._data: list[str] = []
        self._id: str | None = None
        self._retry: int | None = None

    def feed(self, chunk: bytes) -> list[ServerSentEvent]:
        """The events that ``chunk`` completes."""
        if self._skip_lf and chunk.startswith(b"\n"):
            chunk = chunk[1:]
        self._skip_lf = False
        self._buffer += chunk
        events: list[ServerSentEvent] = []
        while True:
            cut = _line_end(self._buffer)
            if cut is None:
                break
            end, after = cut
            line = self._buffer[:end]
            # a CR last in the buffer may be half of a CRLF split over reads
            if self._buffer[end : end + 1] == b"\r" and after == len(self._buffer):
                self._skip_lf = True
            self._buffer = self._buffer[after:]
            event = self._line(line.decode("utf-8", "replace"))
            if event is not None:
                events.append(event)
        return events

    def _line(self, line: str) -> ServerSentEvent | None:
        if line == "":
            return self._dispatch()
        if line.startswith(":"):
            return None
        name, _, value = line.partition(":")
        if value.startswith(" "):
            value = value[1:]
        if name == "event":
            self._event = value
        elif name == "data":
            self._data.append(value)
        elif name == "id":
            if "\0" not in value:
                self._id = value
        elif name == "retry":
            if value.isdigit():
                self._retry = int(value)
        return None

    def _dispatch(self) -> ServerSentEvent | None:
        event = None
        if self._data:
            event = ServerSentEvent(
                event=self._event or "message",
                data="\n".join(self._data),
                id=self._id,
                retry=self._retry,
            )
        self._event, self._data, self._id, self._retry = None, [], None, None
        return event


def _line_end(buffer: bytes) -> tuple[int, int] | None:
    """Where the first line of ``buffer`` ends and the next begins."""
    lf, cr = buffer.find(b"\n"), buffer.find(b"\r")
    if lf < 0 and cr < 0:
        return None
    if cr < 0 or (0 <= lf < cr):
        return lf, lf + 1
    if buffer[cr + 1 : cr + 2] == b"\n":
        return cr, cr + 2
    return cr, cr + 1
