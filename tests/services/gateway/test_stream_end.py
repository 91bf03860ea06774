"""A stream the upstream ends cleanly but early (no ``[DONE]``, no ``response.completed``, no
``message_stop``) or with a non-success terminal event is not a success: the client gets an
in-band error event in the route's format (unless the upstream already sent its own terminal
failure) and nothing is learned. Real uvicorn gateway, fake upstream on 127.0.0.1."""

from __future__ import annotations

import json

import httpx
import pytest

from shared.formats.sse import iter_events

INCOMPLETE = (
    b'event: response.incomplete\ndata: {"type": "response.incomplete", "response": '
    b'{"id": "resp_fake", "status": "incomplete"}, "sequence_number": 99}\n\n'
)
FAILED = (
    b'event: response.failed\ndata: {"type": "response.failed", "response": '
    b'{"id": "resp_fake", "status": "failed"}, "sequence_number": 99}\n\n'
)
SCENARIOS = {
    # name: (path, model, tail replacing the final event, error appended by the gateway)
    "chat-no-done": ("/v1/chat/completions", "m", b"", True),
    "responses-no-completed": ("/v1/responses", "m", b"", True),
    "responses-incomplete": ("/v1/responses", "m", INCOMPLETE, False),
    "responses-failed": ("/v1/responses", "m", FAILED, False),
    "messages-no-stop": ("/v1/messages", "claude/c", b"", True),
    "messages-done-no-stop": ("/v1/messages", "claude/c", b"data: [DONE]\n\n", True),
}


def body_for(path: str, model: str, text: str) -> dict[str, object]:
    """A streaming request body of the route at ``path`` carrying the user ``text``."""
    if path == "/v1/responses":
        return {"model": model, "stream": True, "input": text}
    body: dict[str, object] = {
        "model": model,
        "stream": True,
        "messages": [{"role": "user", "content": text}],
    }
    if path == "/v1/messages":
        body["max_tokens"] = 32
    return body


def stream(gw, secret: str, path: str, model: str, text: str) -> bytes:
    """POST a streaming request and return the whole relayed body (status must be 200)."""
    with httpx.stream(
        "POST",
        gw.base_url + path,
        json=body_for(path, model, text),
        headers={"authorization": f"Bearer {secret}"},
        timeout=30,
    ) as resp:
        assert resp.status_code == 200
        return b"".join(resp.iter_raw())


def assert_error_event_last(path: str, data: bytes) -> None:
    """The final event is the gateway's in-band error in the route's format."""
    name, payload = list(iter_events(data))[-1]
    event = json.loads(payload)
    if path == "/v1/chat/completions":
        assert event["error"]["code"] == "upstream_incomplete"
        assert b"[DONE]" not in data
    elif path == "/v1/responses":
        assert (name, event["type"], event["code"]) == ("error", "error", "upstream_incomplete")
    else:
        assert (name, event["type"], event["error"]["type"]) == ("error", "error", "api_error")
        assert "incomplete" in event["error"]["message"]


@pytest.mark.parametrize("case", list(SCENARIOS))
def test_early_or_unsuccessful_end_is_an_error_and_teaches_nothing(formats_gateway, upstream, case):
    path, model, tail, appended = SCENARIOS[case]
    gw = formats_gateway()
    key_id, secret = gw.create_key()
    upstream.reply_text = "Noted that"
    upstream.stream_tail = tail
    data = stream(gw, secret, path, model, "My name is Zoltan")
    if appended:
        assert_error_event_last(path, data)
    else:
        assert data.endswith(tail)  # the upstream's own terminal failure ends the stream
        assert b"upstream_incomplete" not in data
    # A complete stream on the same route is learned; the cut one never is.
    upstream.stream_tail = None
    done = stream(gw, secret, path, model, "I prefer Rust")
    assert b"upstream_incomplete" not in done
    items = gw.wait_for_memories(lambda ms: any("Rust" in m.content for m in ms), key_id)
    assert not any("Zoltan" in m.content for m in items)


def test_a_whole_json_answer_to_a_stream_request_is_relayed_intact_and_learned(gateway, upstream):
    key_id, secret = gateway.create_key()
    completion = {
        "id": "chatcmpl-json",
        "object": "chat.completion",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "Sure"}}],
    }
    upstream.responder = lambda body: (200, completion)  # ignores "stream": true
    data = stream(gateway, secret, "/v1/chat/completions", "m", "I prefer Rust")
    assert json.loads(data) == completion  # no in-band error appended to a JSON body
    gateway.wait_for_memories(lambda ms: any("Rust" in m.content for m in ms), key_id)
