"""Reading captured streams and writing in-band errors, per format (pure)."""

from __future__ import annotations

import json

from shared.formats import stream_end
from shared.formats.chat import CHAT
from shared.formats.messages import MESSAGES
from shared.formats.responses import RESPONSES
from shared.formats.sse import iter_events
from shared.formats.stream_end import StreamEnd, fold
from tests.fakes.formats import message_events, response_events


def test_sse_events_join_data_lines_and_keep_a_truncated_tail():
    data = b"event: a\ndata: 1\ndata: 2\n\n: comment\n\ndata: 3\r\n\r\ndata: cut"
    assert list(iter_events(data)) == [("a", b"1\n2"), ("", b"3"), ("", b"cut")]


def test_responses_stream_text_and_status():
    data = b"".join(response_events("m", "I bake bread daily", 3))
    outcome = RESPONSES.stream_outcome(data)
    assert outcome.text == "I bake bread daily"
    assert outcome.status == "ok"
    cut = data[: data.index(b"event: response.completed")]
    assert RESPONSES.stream_outcome(cut).status == "open"
    failed = cut + b'event: response.failed\ndata: {"type":"response.failed"}\n\n'
    assert RESPONSES.stream_outcome(failed).status == "failed"


def test_responses_error_event_continues_the_sequence():
    data = b"".join(response_events("m", "a b c", 3))
    cut = data[: data.index(b"event: response.completed")]
    event = RESPONSES.stream_error("timed out", "upstream_error", "upstream_timeout", cut)
    name, payload = next(iter_events(event))
    body = json.loads(payload)
    assert name == "error"
    last = max(json.loads(p)["sequence_number"] for _, p in iter_events(cut))
    assert body == {
        "type": "error",
        "code": "upstream_timeout",
        "message": "timed out",
        "param": None,
        "sequence_number": last + 1,
    }


def test_messages_stream_text_status_and_error_event():
    data = b"".join(message_events("c", "Hello there friend", 2))
    outcome = MESSAGES.stream_outcome(data)
    assert (outcome.text, outcome.status) == ("Hello there friend", "ok")
    event = MESSAGES.stream_error("timed out", "upstream_error", "upstream_timeout", data)
    name, payload = next(iter_events(event))
    assert name == "error"
    assert json.loads(payload) == {
        "type": "error",
        "error": {"type": "api_error", "message": "timed out"},
    }
    first = data[: data.index(b"\n\n") + 2]
    assert MESSAGES.stream_outcome(first + event).status == "failed"


def test_chat_stream_done_and_in_band_error():
    data = b'data: {"choices":[{"delta":{"content":"Hi"}}]}\n\ndata: [DONE]\n\n'
    assert (CHAT.stream_outcome(data).text, CHAT.stream_outcome(data).status) == ("Hi", "ok")
    err = CHAT.stream_error("boom", "upstream_error", "upstream_timeout", b"")
    first = data[: data.index(b"\n\n") + 2]
    assert CHAT.stream_outcome(first + err).status == "failed"
    assert json.loads(err[len(b"data: ") :])["error"]["code"] == "upstream_timeout"


def test_only_the_successful_terminal_event_is_ok_per_format():
    chat = b'data: {"choices":[{"delta":{"content":"Hi"}}]}\n\n'
    assert CHAT.stream_outcome(chat).status == "open"
    assert (
        CHAT.stream_outcome(chat + b'data: {"error": {"message": "x"}}\n\ndata: [DONE]\n\n').status
        == "failed"
    )
    responses = b"".join(response_events("m", "a b", 2))
    cut = responses[: responses.index(b"event: response.completed")]
    incomplete = b'event: response.incomplete\ndata: {"type":"response.incomplete"}\n\n'
    assert RESPONSES.stream_outcome(cut + incomplete).status == "failed"
    assert RESPONSES.event_status("", b'{"type":"response.completed"}') == "ok"
    messages = b"".join(message_events("c", "a b", 2))
    no_stop = messages[: messages.index(b"event: message_stop")]
    assert MESSAGES.stream_outcome(no_stop).status == "open"
    assert MESSAGES.stream_outcome(no_stop + b"data: [DONE]\n\n").status == "open"
    assert MESSAGES.event_status("", b'{"type":"message_stop"}') == "ok"


def test_stream_end_follows_events_split_across_chunks():
    data = b"".join(message_events("c", "one two three", 3)).replace(b"\n", b"\r\n")
    watch = StreamEnd(MESSAGES.event_status)
    for i in range(0, len(data), 7):  # boundaries and CRLFs straddle chunks
        watch.feed(data[i : i + 7])
        if i + 7 < len(data) - 40:
            assert watch.status == "open"
    assert watch.finish() == "ok"
    cut = StreamEnd(CHAT.event_status)
    cut.feed(b'data: {"choices":[]}\n\ndata: [DO')
    assert cut.status == "open"
    cut.feed(b"NE]")  # the final event without its blank line still counts at the end
    assert cut.finish() == "ok"


def test_stream_end_skips_an_oversized_event(monkeypatch):
    monkeypatch.setattr(stream_end, "MAX_PENDING_BYTES", 64)
    watch = StreamEnd(CHAT.event_status)
    watch.feed(b"data: " + b"x" * 100)
    watch.feed(b"yy\n\ndata: [DONE]\n\n")
    assert watch.finish() == "ok"
    assert fold("ok", "failed") == "failed" and fold("open", "ok") == "ok"
