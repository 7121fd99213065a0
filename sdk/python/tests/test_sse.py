"""The SSE decoder on the framings the spec allows, fed in every split."""

from __future__ import annotations

from paddock import ServerSentEvent, SSEDecoder

STREAM = (
    b": keep-alive\r\n"
    b'id: 12\r\nevent: tool.call\r\ndata: {"seq":12}\r\n\r\n'
    b'event: model.delta\ndata: {"seq":0}\n\n'
    b"data: line one\rdata: line two\r\r"
    b"id: 13\nevent: empty\n\n"
    b"retry: 1500\nid:14\ndata:x\n\n"
)

EXPECTED = [
    ServerSentEvent(event="tool.call", data='{"seq":12}', id="12"),
    ServerSentEvent(event="model.delta", data='{"seq":0}', id=None),
    ServerSentEvent(event="message", data="line one\nline two", id=None),
    ServerSentEvent(event="message", data="x", id="14", retry=1500),
]


def test_the_whole_stream_at_once() -> None:
    assert SSEDecoder().feed(STREAM) == EXPECTED


def test_every_split_in_two_gives_the_same_events() -> None:
    for cut in range(len(STREAM) + 1):
        decoder = SSEDecoder()
        events = decoder.feed(STREAM[:cut]) + decoder.feed(STREAM[cut:])
        assert events == EXPECTED, cut


def test_byte_by_byte_gives_the_same_events() -> None:
    decoder = SSEDecoder()
    events = []
    for i in range(len(STREAM)):
        events += decoder.feed(STREAM[i : i + 1])
    assert events == EXPECTED


def test_an_event_cut_short_is_not_dispatched() -> None:
    assert SSEDecoder().feed(b"id: 3\nevent: run.state\ndata: {}\n") == []
