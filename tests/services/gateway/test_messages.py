"""``POST /v1/messages`` through the official ``anthropic`` client against a fake Anthropic
upstream: system and cache breakpoints byte-identical, memory after the cached prefix, x-api-key
and Bearer auth, headers both ways, Anthropic error shape, streaming (error before the first
byte, learning after a full stream, disconnect), memories shared across formats."""

from __future__ import annotations

import json
import socket
from typing import Any, cast

import anthropic
import httpx
import pytest

from tests.services.gateway.conftest import anthropic_client, openai_client

MODEL = "claude/claude-test"
SYSTEM = [{"type": "text", "text": "You are terse.", "cache_control": {"type": "ephemeral"}}]


def error_body(exc: anthropic.APIStatusError) -> dict[str, Any]:
    """The decoded JSON error body of ``exc``."""
    return cast(dict[str, Any], exc.body)


def last_call(upstream, path="/v1/messages"):
    return [c for c in upstream.calls if c.path == path][-1]


def ask(client, text, **kwargs):
    return client.messages.create(
        model=MODEL, max_tokens=64, messages=[{"role": "user", "content": text}], **kwargs
    )


def test_x_api_key_and_bearer_authenticate_and_the_provider_key_replaces_them(
    formats_gateway, upstream
):
    gw = formats_gateway()
    _, secret = gw.create_key()
    upstream.reply_text = "Hello"
    resp = ask(anthropic_client(gw, secret), "hi")
    assert resp.content[0].text == "Hello"
    sent = last_call(upstream)
    assert sent.headers["x-api-key"] == "sk-ant-upstream-test"
    assert "authorization" not in sent.headers
    assert sent.body["model"] == "claude-test"  # provider prefix stripped
    bearer = anthropic.Anthropic(base_url=gw.base_url, auth_token=secret, max_retries=0)
    assert ask(bearer, "hi").content[0].text == "Hello"
    with pytest.raises(anthropic.AuthenticationError) as info:
        ask(anthropic_client(gw, "mg-wrong"), "hi")
    assert error_body(info.value)["type"] == "error"
    assert error_body(info.value)["error"]["type"] == "authentication_error"
    # the SDK reads Anthropic's request-id header: the gateway's id, as in its logs
    rid = info.value.response.headers["x-mnemogate-request-id"]
    assert info.value.request_id == rid and len(rid) == 16


def test_x_api_key_and_bearer_naming_different_keys_are_refused(formats_gateway, upstream):
    """Two keys in one request (another tenant's in one header) answer 401, never as either."""
    gw = formats_gateway()
    _, a = gw.create_key("a")
    _, b = gw.create_key("b")
    upstream.reply_text = "Hello"
    body = {"model": "claude/c", "max_tokens": 9, "messages": [{"role": "user", "content": "hi"}]}
    both = {"x-api-key": a, "authorization": f"Bearer {b}"}
    resp = httpx.post(gw.base_url + "/v1/messages", json=body, headers=both)
    assert resp.status_code == 401
    assert "conflicting api keys" in resp.json()["error"]["message"]
    same = {"x-api-key": a, "authorization": f"Bearer {a}"}
    assert httpx.post(gw.base_url + "/v1/messages", json=body, headers=same).status_code == 200


def test_two_authorization_or_x_api_key_headers_naming_different_keys_are_refused(
    formats_gateway, upstream
):
    gw = formats_gateway()
    _, a = gw.create_key("a2")
    _, b = gw.create_key("b2")
    upstream.reply_text = "Hello"
    msg = {"model": "claude/c", "max_tokens": 9, "messages": [{"role": "user", "content": "hi"}]}
    chat = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    cases = [
        (
            "/v1/chat/completions",
            chat,
            [("authorization", f"Bearer {a}"), ("authorization", f"Bearer {b}")],
        ),
        ("/v1/messages", msg, [("x-api-key", a), ("x-api-key", b)]),
    ]
    for path, body, headers in cases:
        resp = httpx.post(gw.base_url + path, json=body, headers=headers)
        assert resp.status_code == 401, (path, resp.text)
        assert "conflicting api keys" in resp.text
        # the same key twice is one key
        twice = [(name, value.replace(b, a)) for name, value in headers]
        assert httpx.post(gw.base_url + path, json=body, headers=twice).status_code == 200


def test_anthropic_headers_reach_upstream_and_upstream_headers_come_back(formats_gateway, upstream):
    gw = formats_gateway()
    _, secret = gw.create_key()
    upstream.extra_headers = {
        "request-id": "req_011",
        "anthropic-ratelimit-requests-remaining": "41",
        "retry-after": "3",
    }
    client = anthropic_client(
        gw, secret, default_headers={"anthropic-beta": "prompt-caching-2024-07-31"}
    )
    raw = client.messages.with_raw_response.create(
        model=MODEL,
        max_tokens=8,
        messages=[{"role": "user", "content": "hi"}],
        extra_headers={
            "anthropic-version": "2023-06-01",
            "cookie": "session=secret",
            "x-mnemogate-session-id": "s1",
        },
    )
    sent = last_call(upstream).headers
    assert sent["anthropic-version"] == "2023-06-01"
    assert sent["anthropic-beta"] == "prompt-caching-2024-07-31"
    assert "cookie" not in sent and "x-mnemogate-session-id" not in sent
    assert raw.headers["request-id"] == "req_011"
    assert raw.headers["anthropic-ratelimit-requests-remaining"] == "41"
    assert raw.headers["retry-after"] == "3"


@pytest.mark.parametrize("mode", ["create", "stream_true", "stream_helper"])
def test_c2_memory_after_the_cached_prefix_system_unchanged_and_learned(
    formats_gateway, upstream, mode
):
    gw = formats_gateway()
    key_id, secret = gw.create_key()
    client = anthropic_client(gw, secret)
    upstream.reply_text = "Noted."
    ask(client, "I work at a bakery", system=SYSTEM)
    gw.wait_for_memories(lambda ms: any("bakery" in m.content for m in ms), key_id)
    upstream.reply_text = "At a bakery you do"
    history = [
        {
            "role": "user",
            "content": [
                {
                    "type": "text",
                    "text": "I work at a bakery",
                    "cache_control": {"type": "ephemeral"},
                }
            ],
        },
        {"role": "assistant", "content": "Noted."},
        {"role": "user", "content": "Where do I work?"},
    ]
    kwargs: dict[str, Any] = dict(model=MODEL, max_tokens=64, system=SYSTEM, messages=history)
    if mode == "create":
        text = client.messages.create(**kwargs).content[0].text
    elif mode == "stream_true":
        events = list(client.messages.create(stream=True, **kwargs))
        assert events[0].type == "message_start"
        assert any(e.type == "message_delta" and e.usage.output_tokens == 2 for e in events)
        text = "".join(e.delta.text for e in events if e.type == "content_block_delta")
    else:
        with client.messages.stream(**kwargs) as stream:
            text = stream.get_final_text()
    assert text == "At a bakery you do"
    sent = last_call(upstream)
    assert json.dumps(SYSTEM, separators=(",", ":")).encode() in sent.raw.replace(b", ", b",")
    assert sent.body["system"] == SYSTEM
    assert sent.body["messages"][:2] == history[:2]
    newest = sent.body["messages"][2]
    assert newest["role"] == "user" and len(sent.body["messages"]) == 3
    assert "bakery" in newest["content"][0]["text"]
    assert newest["content"][1] == {"type": "text", "text": "Where do I work?"}


def test_prefix_bytes_identical_across_turns(formats_gateway, upstream):
    gw = formats_gateway()
    key_id, secret = gw.create_key()
    ask(anthropic_client(gw, secret), "I work at a bakery")
    gw.wait_for_memories(lambda ms: any("bakery" in m.content for m in ms), key_id)
    system = b'[{"type": "text", "text": "Be  kind", "cache_control": {"type": "ephemeral"}}]'
    first = (
        b'{"role": "user", "content": [{"type": "text", "text": "Hi", '
        b'"cache_control": {"type": "ephemeral"}}]}'
    )
    hello = b', {"role": "assistant", "content": "Hello"}'
    where = b', {"role": "user", "content": "Where do I work?"}'
    turns = [
        first + hello + where,
        first + hello + where + b', {"role": "assistant", "content": "bakery"}' + where,
    ]
    sent = []
    for messages in turns:
        raw = (
            b'{"model": "claude/c", "max_tokens": 9, "system": '
            + system
            + b', "messages": ['
            + messages
            + b"]}"
        )
        resp = httpx.post(
            gw.base_url + "/v1/messages",
            content=raw,
            headers={"x-api-key": secret, "content-type": "application/json"},
        )
        assert resp.status_code == 200, resp.text
        assert resp.headers["x-mnemogate-memory-injected"] != "0"
        sent.append(last_call(upstream).raw)
    cut = sent[0].index(b'{"role":"user","content":[{"type":"text","text":"<recalled_memories>')
    assert sent[0][:cut].endswith(b'{"role": "assistant", "content": "Hello"},')
    assert sent[1].startswith(sent[0][:cut])
    assert b'"system":' + system in sent[1]


def test_memory_learned_on_messages_is_recalled_on_chat_and_responses(formats_gateway, upstream):
    gw = formats_gateway()
    key_id, secret = gw.create_key()
    ask(anthropic_client(gw, secret), "My dog is called Rex")
    gw.wait_for_memories(lambda ms: any("Rex" in m.content for m in ms), key_id)
    client = openai_client(gw, secret)
    client.chat.completions.create(
        model="m", messages=[{"role": "user", "content": "What is my dog called?"}]
    )
    assert "Rex" in json.dumps(upstream.requests[-1]["messages"])
    client.responses.create(model="m", input="What is my dog called?")
    assert "Rex" in json.dumps(last_call(upstream, "/v1/responses").body["input"])


def test_default_provider_does_not_speak_messages(formats_gateway, upstream):
    gw = formats_gateway()
    _, secret = gw.create_key()
    with pytest.raises(anthropic.BadRequestError) as info:
        anthropic_client(gw, secret).messages.create(
            model="plain-model", max_tokens=8, messages=[{"role": "user", "content": "hi"}]
        )
    assert error_body(info.value)["error"]["type"] == "invalid_request_error"
    assert "does not accept the 'messages' format" in error_body(info.value)["error"]["message"]
    assert upstream.calls == []


def test_s1_stream_error_passed_through_in_anthropic_shape(formats_gateway, upstream):
    gw = formats_gateway()
    key_id, secret = gw.create_key()
    upstream.fail_status = 529
    upstream.extra_headers = {"request-id": "req_529"}
    with pytest.raises(anthropic.APIStatusError) as info:
        list(ask(anthropic_client(gw, secret), "My name is Quentin", stream=True))
    assert info.value.status_code == 529
    assert info.value.response.headers["request-id"] == "req_529"
    assert info.value.body == {
        "type": "error",
        "error": {"type": "overloaded_error", "message": "Overloaded"},
    }
    upstream.fail_status = None
    list(ask(anthropic_client(gw, secret), "I prefer Rust", stream=True))  # read to the end
    items = gw.wait_for_memories(lambda ms: any("Rust" in m.content for m in ms), key_id)
    assert not any("Quentin" in m.content for m in items)


@pytest.mark.parametrize(
    ("status", "error"), [(400, anthropic.BadRequestError), (429, anthropic.RateLimitError)]
)
def test_upstream_4xx_pass_through(formats_gateway, upstream, status, error):
    gw = formats_gateway()
    _, secret = gw.create_key()
    upstream.fail_status = status
    upstream.extra_headers = {"retry-after": "11"}
    with pytest.raises(error) as info:
        ask(anthropic_client(gw, secret), "hello")
    assert info.value.status_code == status
    assert info.value.response.headers["retry-after"] == "11"
    assert error_body(info.value)["error"]["message"] == "Overloaded"


def test_s3_disconnect_cancels_upstream(formats_gateway, upstream):
    gw = formats_gateway()
    key_id, secret = gw.create_key()
    upstream.reply_text = " ".join(f"w{i}" for i in range(30))
    upstream.stream_chunks = 30
    upstream.stream_chunk_delay_s = 0.2
    payload = (
        b'{"model": "claude/c", "max_tokens": 9, "stream": true, '
        b'"messages": [{"role": "user", "content": "My name is Zoltan"}]}'
    )
    sock = socket.create_connection(("127.0.0.1", gw.port), timeout=10)
    sock.sendall(
        b"POST /v1/messages HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        + f"x-api-key: {secret}\r\nContent-Length: {len(payload)}\r\n\r\n".encode()
        + payload
    )
    received = b""
    while b"content_block_delta" not in received:
        received += sock.recv(4096)
    sock.close()
    assert upstream.stream_cancelled.wait(10), "upstream stream was not cancelled"
    upstream.reset()
    ask(anthropic_client(gw, secret), "I prefer Rust")
    items = gw.wait_for_memories(lambda ms: any("Rust" in m.content for m in ms), key_id)
    assert not any("Zoltan" in m.content for m in items)


def test_mid_stream_failure_is_an_anthropic_error_event(formats_gateway, upstream):
    gw = formats_gateway(upstream_timeout_s=2.0)
    key_id, secret = gw.create_key()
    upstream.reply_text = " ".join(f"w{i}" for i in range(30))
    upstream.stream_chunks = 30
    upstream.stream_chunk_delay_s = 0.2
    # the stream outlives the 2 s upstream timeout: an in-band Anthropic error event
    with pytest.raises(anthropic.APIStatusError) as info:
        list(ask(anthropic_client(gw, secret), "My name is Timothy", stream=True))
    assert error_body(info.value)["error"]["type"] == "api_error"
    assert "timed out" in error_body(info.value)["error"]["message"]
    assert not any("Timothy" in m.content for m in gw.memories(key_id))
