"""``POST /v1/responses`` through the official ``openai`` client against a fake Responses upstream:
memory as an input item, caller fields untouched, prefix bytes stable, learning, streaming
(error before the first byte, learning after a full stream, disconnect) and pass-through of
upstream errors."""

from __future__ import annotations

import json
import socket
from typing import Any, cast

import httpx
import openai
import pytest

from tests.services.gateway.conftest import openai_client

BLOCK_ITEM = b'{"role":"system","content":"<recalled_memories>'


def teach_through_chat(gw, client, text: str, key_id: str, word: str) -> None:
    client.chat.completions.create(model="m", messages=[{"role": "user", "content": text}])
    gw.wait_for_memories(lambda ms: any(word in m.content for m in ms), key_id)


def last_call(upstream, path="/v1/responses"):
    return [c for c in upstream.calls if c.path == path][-1]


@pytest.mark.parametrize("stream", [False, True])
def test_c1_memory_learned_on_chat_is_an_input_item_and_instructions_stay(
    formats_gateway, upstream, stream
):
    gw = formats_gateway()
    key_id, secret = gw.create_key()
    client = openai_client(gw, secret)
    teach_through_chat(gw, client, "I work at a bakery", key_id, "bakery")
    upstream.reply_text = "You work at a bakery"
    kwargs: dict[str, Any] = dict(
        model="gpt-test", instructions="Answer in one line.", input="Where do I work?"
    )
    if stream:
        events = list(client.responses.create(stream=True, **kwargs))
        text = "".join(e.delta for e in events if e.type == "response.output_text.delta")
        assert events[-1].type == "response.completed"
        assert events[-1].response.usage.total_tokens == 5  # usage events kept
    else:
        resp = client.responses.create(**kwargs)
        text = resp.output_text
    assert text == "You work at a bakery"
    sent = last_call(upstream).body
    assert sent["instructions"] == "Answer in one line."
    assert sent["model"] == "gpt-test"
    assert sent["input"][0]["role"] == "system"
    assert "bakery" in sent["input"][0]["content"]
    assert sent["input"][1] == {"role": "user", "content": "Where do I work?"}


def test_the_official_stream_helper_reads_a_streamed_answer_with_memory(formats_gateway, upstream):
    # client.responses.stream() assembles the answer from every event of the stream (content
    # parts, text done, item done): a stream missing one fails inside the client
    gw = formats_gateway()
    key_id, secret = gw.create_key()
    client = openai_client(gw, secret)
    teach_through_chat(gw, client, "I work at a bakery", key_id, "bakery")
    upstream.reply_text = "You work at a bakery"
    with client.responses.stream(model="m", input="Where do I work?") as stream:
        final = stream.get_final_response()
    assert final.output_text == "You work at a bakery"
    assert "bakery" in last_call(upstream).body["input"][0]["content"]


def test_prefix_bytes_identical_across_turns_and_caller_fields_pass_through(
    formats_gateway, upstream
):
    gw = formats_gateway()
    key_id, secret = gw.create_key()
    teach_through_chat(gw, openai_client(gw, secret), "I work at a bakery", key_id, "bakery")
    caller = (
        b'"instructions": "Be  brief", "store": true, "include": ["reasoning.encrypted_content"],'
        b' "reasoning": {"effort": "low"}, "tools": [{"type": "function", "name": "f",'
        b' "parameters": {"type": "object"}}], "x-future": {"n": 1.50, "s": "caf\\u00e9"},'
    )
    likes = b'{"role": "user", "content": "I like caf\\u00e9s"}'
    where = b'{"role": "user", "content": "Where do I work?"}'
    answer = (
        b'{"type": "message", "role": "assistant", "content": [{"type": "output_text", '
        b'"text": "At a bakery"}]}'
    )
    turn1 = b"[" + likes + b", " + where + b"]"
    turn2 = b"[" + likes + b", " + where + b", " + answer + b", " + where + b"]"
    sent = []
    for items in (turn1, turn2):
        raw = b'{"model": "m", ' + caller + b' "input": ' + items + b"}"
        resp = httpx.post(
            gw.base_url + "/v1/responses",
            content=raw,
            headers={"authorization": f"Bearer {secret}", "content-type": "application/json"},
        )
        assert resp.status_code == 200, resp.text
        assert resp.headers["x-mnemogate-memory-injected"] != "0"
        sent.append(last_call(upstream).raw)
    prefix = sent[0][: sent[0].index(BLOCK_ITEM)]
    assert prefix.endswith(b'{"role": "user", "content": "I like caf\\u00e9s"},')
    assert sent[1].startswith(prefix)
    assert b'"instructions":"Be  brief","store":true' in sent[1]  # values verbatim
    assert b'"reasoning":{"effort": "low"}' in sent[1]
    assert b'"x-future":{"n": 1.50, "s": "caf\\u00e9"}' in sent[1]
    assert b'"include":["reasoning.encrypted_content"]' in sent[1]


def test_previous_response_id_with_new_input_still_gets_memory(formats_gateway, upstream):
    gw = formats_gateway()
    key_id, secret = gw.create_key()
    client = openai_client(gw, secret)
    teach_through_chat(gw, client, "I work at a bakery", key_id, "bakery")
    client.responses.create(
        model="m",
        previous_response_id="resp_earlier",
        store=True,
        input=[{"role": "user", "content": [{"type": "input_text", "text": "Where do I work?"}]}],
    )
    sent = last_call(upstream).body
    assert sent["previous_response_id"] == "resp_earlier"
    assert sent["store"] is True
    assert "bakery" in sent["input"][0]["content"]
    assert sent["input"][1]["content"][0]["text"] == "Where do I work?"


@pytest.mark.parametrize("stream", [False, True])
def test_learning_from_user_input_items_not_from_the_assistant(formats_gateway, upstream, stream):
    gw = formats_gateway()
    key_id, secret = gw.create_key()
    client = openai_client(gw, secret)
    upstream.reply_text = "As an AI, I usually recommend Python"
    resp = client.responses.create(
        model="m", input=[{"role": "user", "content": "My name is Zelda"}], stream=stream
    )
    if stream:
        list(resp)
    items = gw.wait_for_memories(lambda ms: any("Zelda" in m.content for m in ms), key_id)
    assert not any("recommend Python" in m.content for m in items)


def test_s1_stream_error_status_is_passed_through_and_nothing_learned(formats_gateway, upstream):
    gw = formats_gateway()
    key_id, secret = gw.create_key()
    upstream.fail_status = 500
    upstream.extra_headers = {"x-request-id": "req_up_1"}
    with pytest.raises(openai.InternalServerError) as info:
        list(
            openai_client(gw, secret).responses.create(
                model="m", input="My name is Quentin", stream=True
            )
        )
    assert info.value.status_code == 500
    assert info.value.response.headers["x-request-id"] == "req_up_1"
    assert cast(dict[str, Any], info.value.body)["code"] == "boom"
    upstream.fail_status = None
    openai_client(gw, secret).responses.create(model="m", input="I prefer Rust")
    items = gw.wait_for_memories(lambda ms: any("Rust" in m.content for m in ms), key_id)
    assert not any("Quentin" in m.content for m in items)


def test_s3_client_disconnect_cancels_upstream(formats_gateway, upstream):
    gw = formats_gateway()
    key_id, secret = gw.create_key()
    upstream.reply_text = " ".join(f"w{i}" for i in range(40))
    upstream.stream_chunks = 40
    upstream.stream_chunk_delay_s = 0.2
    payload = b'{"model": "m", "stream": true, "input": "My name is Zoltan"}'
    sock = socket.create_connection(("127.0.0.1", gw.port), timeout=10)
    sock.sendall(
        b"POST /v1/responses HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        + f"Authorization: Bearer {secret}\r\nContent-Length: {len(payload)}\r\n\r\n".encode()
        + payload
    )
    received = b""
    while b"response.output_text.delta" not in received:
        received += sock.recv(4096)
    sock.close()
    assert upstream.stream_cancelled.wait(10), "upstream stream was not cancelled"
    upstream.reset()
    openai_client(gw, secret).responses.create(model="m", input="I prefer Rust")
    items = gw.wait_for_memories(lambda ms: any("Rust" in m.content for m in ms), key_id)
    assert not any("Zoltan" in m.content for m in items)


def test_mid_stream_failure_ends_with_an_error_event(formats_gateway, upstream):
    gw = formats_gateway(upstream_timeout_s=2.0)
    key_id, secret = gw.create_key()
    upstream.reply_text = " ".join(f"w{i}" for i in range(20))
    upstream.stream_chunks = 20
    upstream.stream_chunk_delay_s = 0.3
    events = list(
        openai_client(gw, secret).responses.create(
            model="m", input="My name is Timothy", stream=True
        )
    )
    assert events[0].type == "response.created"
    last = events[-1]
    assert last.type == "error"
    assert last.code == "upstream_timeout"
    assert last.sequence_number == events[-2].sequence_number + 1
    assert not any(e.type == "response.completed" for e in events)
    assert not any("Timothy" in m.content for m in gw.memories(key_id))


@pytest.mark.parametrize(
    ("status", "error"),
    [
        (400, openai.BadRequestError),
        (429, openai.RateLimitError),
        (503, openai.InternalServerError),
    ],
)
def test_upstream_errors_pass_through_with_status_headers_and_body(
    formats_gateway, upstream, status, error
):
    gw = formats_gateway()
    _, secret = gw.create_key()
    upstream.fail_status = status
    upstream.extra_headers = {"retry-after": "7", "x-ratelimit-remaining-requests": "0"}
    with pytest.raises(error) as info:
        openai_client(gw, secret).responses.create(model="m", input="hello")
    assert info.value.status_code == status
    assert info.value.response.headers["retry-after"] == "7"
    assert info.value.response.headers["x-ratelimit-remaining-requests"] == "0"
    assert info.value.body == {
        "message": "upstream exploded",
        "type": "server_error",
        "code": "boom",
    }
    raw = httpx.post(
        gw.base_url + "/v1/responses",
        json={"model": "m", "input": "x"},
        headers={"authorization": f"Bearer {secret}"},
    )
    assert json.loads(raw.content) == {"error": info.value.body}


def test_client_headers_reach_the_upstream_with_the_provider_key(formats_gateway, upstream):
    gw = formats_gateway()
    _, secret = gw.create_key()
    client = openai.OpenAI(
        base_url=gw.base_url + "/v1",
        api_key=secret,
        organization="org-1",
        project="proj-1",
        max_retries=0,
        default_headers={"HTTP-Referer": "https://app.example", "X-Title": "App"},
    )
    upstream.extra_headers = {"openai-processing-ms": "8", "x-request-id": "req_r"}
    raw = client.responses.with_raw_response.create(model="m", input="hi")
    assert raw.headers["openai-processing-ms"] == "8"
    assert raw.headers["x-request-id"] == "req_r"
    sent = last_call(upstream).headers
    assert sent["openai-organization"] == "org-1"
    assert sent["openai-project"] == "proj-1"
    assert sent["http-referer"] == "https://app.example"
    assert sent["x-title"] == "App"
    assert sent["authorization"] == "Bearer sk-upstream-test"
    assert sent["user-agent"].startswith("OpenAI/Python")
