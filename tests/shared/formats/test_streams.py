"""Reading captured streams and writing in-band errors, per format (pure)."""

from __future__ import annotations

import json

from shared.formats.chat import CHAT
from shared.formats.messages import MESSAGES
from shared.formats.responses import RESPONSES
from shared.formats.sse import iter_events
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
