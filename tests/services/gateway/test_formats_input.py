"""Bad input on every client route gets a 4xx in that route's own error shape, never a 5xx;
embeddings pass through; header fidelity on the chat route; a bearer token with non-ASCII
bytes is a 401."""

from __future__ import annotations

from typing import Any

import httpx
import openai
import pytest

from tests.services.gateway.conftest import openai_client

ROUTES = {
    "chat": (
        "/v1/chat/completions",
        b'{"model": "m", "messages": [{"role": "user", "content": "x"}]}',
    ),
    "responses": ("/v1/responses", b'{"model": "m", "input": "x"}'),
    "messages": (
        "/v1/messages",
        b'{"model": "claude/c", "max_tokens": 5, "messages": [{"role": "user", "content": "x"}]}',
    ),
    "embeddings": ("/v1/embeddings", b'{"model": "e", "input": "x"}'),
}
BAD = {
    "chat": [b'{"model": "m"}', b'{"model": "m", "messages": "hi"}', b'{"messages": []}'],
    "responses": [
        b'{"model": "m"}',
        b'{"input": "x"}',
        b'{"model": "m", "input": 5}',
        b'{"model": "m", "input": [1]}',
        b'{"model": "m", "input": "x", "stream": "yes"}',
        b'{"model": 3, "input": "x"}',
    ],
    "messages": [
        b'{"model": "claude/c"}',
        b'{"messages": [{"role": "user", "content": "x"}]}',
        b'{"model": "claude/c", "messages": [{"role": "system", "content": "x"}]}',
        b'{"model": "claude/c", "messages": [{"role": "user", "content": 7}]}',
        b'{"model": "claude/c", "messages": [{"role": "user", "content": "x"}], "system": 1}',
        b'{"model": "claude/c", "messages": [{"role": "user", "content": "x"}], "metadata": 1}',
    ],
    "embeddings": [b'{"model": "e"}', b'{"input": "x"}', b'{"model": "e", "input": 5}'],
}
COMMON_BAD = [
    b"{not json",
    b"",
    b"[1, 2]",
    b'"str"',
    b'{"x": ' + b"[" * 50_000 + b"]" * 50_000 + b"}",
]


def post(gw, route, content, headers=None):
    path, _ = ROUTES[route]
    h = {"content-type": "application/json", **(headers or {})}
    return httpx.post(gw.base_url + path, content=content, headers=h, timeout=20)


def assert_route_error(route, resp, status):
    assert resp.status_code == status, resp.text
    body = resp.json()
    if route == "messages":
        assert set(body) == {"type", "error"} and body["type"] == "error"
        assert set(body["error"]) == {"type", "message"} and body["error"]["message"]
        return body["error"]["type"]
    assert set(body) == {"error"} and set(body["error"]) == {"message", "type", "code"}
    return body["error"]["type"]


@pytest.mark.parametrize("route", list(ROUTES))
def test_bad_input_is_a_400_in_the_route_shape(formats_gateway, upstream, route):
    gw = formats_gateway()
    _, secret = gw.create_key()
    for content in BAD[route] + COMMON_BAD:
        resp = post(gw, route, content, {"authorization": f"Bearer {secret}"})
        assert assert_route_error(route, resp, 400) == "invalid_request_error", content[:80]
    wrong_method = httpx.get(gw.base_url + ROUTES[route][0], headers={"x-api-key": secret})
    assert assert_route_error(route, wrong_method, 405) == "invalid_request_error"
    assert upstream.calls == [] and upstream.requests == []


@pytest.mark.parametrize("route", list(ROUTES))
def test_huge_body_is_a_413_and_bad_credentials_a_401(formats_gateway, upstream, route):
    gw = formats_gateway(max_body_bytes=2048)
    _, secret = gw.create_key()
    huge = ROUTES[route][1][:-1] + b', "pad": "' + b"x" * 4096 + b'"}'
    kind = assert_route_error(
        route, post(gw, route, huge, {"authorization": f"Bearer {secret}"}), 413
    )
    assert kind == ("request_too_large" if route == "messages" else "invalid_request_error")
    for headers in ({}, {"authorization": "Bearer mg-nope"}, {"authorization": b"Bearer \xff\xfe"}):
        resp = post(gw, route, ROUTES[route][1], headers)
        assert assert_route_error(route, resp, 401) == "authentication_error"
    assert upstream.calls == [] and upstream.requests == []


def test_embeddings_pass_through_byte_for_byte_with_routing(formats_gateway, upstream):
    gw = formats_gateway()
    _, secret = gw.create_key()
    client = openai_client(gw, secret)
    result = client.embeddings.create(model="text-embed", input=["a b", "c"])
    assert len(result.data) == 2 and len(result.data[0].embedding) == upstream.embedding_dim
    raw = b'{"model": "text-embed",  "input": "caf\\u00e9", "dimensions": 16}'
    resp = httpx.post(
        gw.base_url + "/v1/embeddings", content=raw, headers={"authorization": f"Bearer {secret}"}
    )
    assert resp.status_code == 200
    sent = upstream.calls[-1]
    assert sent.raw == raw  # unchanged bytes
    assert sent.headers["authorization"] == "Bearer sk-upstream-test"
    with pytest.raises(openai.BadRequestError) as info:  # claude speaks only messages
        client.embeddings.create(model="claude/e", input="x")
    assert info.value.code == "unsupported_format"
    upstream.embeddings_status = 429
    upstream.extra_headers = {"retry-after": "5", "x-ratelimit-limit-requests": "60"}
    with pytest.raises(openai.RateLimitError) as limited:
        client.embeddings.create(model="text-embed", input="x")
    assert limited.value.response.headers["retry-after"] == "5"
    assert limited.value.response.headers["x-ratelimit-limit-requests"] == "60"
    assert limited.value.body == {"message": "fake failure", "type": "rate_limit", "code": None}


def test_chat_headers_are_forwarded_and_passed_back(formats_gateway, upstream):
    gw = formats_gateway(strip_headers="x-internal-*, x-drop-me")
    _, secret = gw.create_key()
    upstream.extra_headers = {
        "openai-processing-ms": "12",
        "x-request-id": "req_9",
        "x-ratelimit-remaining-tokens": "99",
        "x-custom-upstream": "yes",
        "x-internal-trace": "hidden",
        "set-cookie": "__cf_bm=abc",
    }
    resp = httpx.post(
        gw.base_url + "/v1/chat/completions",
        json={"model": "m", "messages": [{"role": "user", "content": "hi"}]},
        headers={
            "authorization": f"Bearer {secret}",
            "openai-organization": "org-1",
            "openai-project": "proj-1",
            "HTTP-Referer": "https://app.example",
            "X-Title": "My App",
            "x-api-key": "client-secret",
            "cookie": "a=b",
            "x-mnemogate-no-learn": "1",
            "x-omniroute-session-id": "s",
            "x-internal-id": "7",
            "x-drop-me": "1",
            "connection": "keep-alive, x-hop",
            "x-hop": "1",
        },
    )
    assert resp.status_code == 200
    sent = upstream.headers[-1]
    for name, value in [
        ("openai-organization", "org-1"),
        ("openai-project", "proj-1"),
        ("http-referer", "https://app.example"),
        ("x-title", "My App"),
        ("authorization", "Bearer sk-upstream-test"),
    ]:
        assert sent[name] == value
    for name in (
        "x-api-key",
        "cookie",
        "x-mnemogate-no-learn",
        "x-omniroute-session-id",
        "x-internal-id",
        "x-drop-me",
        "x-hop",
    ):
        assert name not in sent
    for name, value in [
        ("openai-processing-ms", "12"),
        ("x-request-id", "req_9"),
        ("x-ratelimit-remaining-tokens", "99"),
        ("x-custom-upstream", "yes"),
    ]:
        assert resp.headers[name] == value
    assert "x-internal-trace" not in resp.headers and "set-cookie" not in resp.headers
    assert resp.headers["content-type"] == "application/json"
    assert resp.headers.get_list("server") == ["uvicorn"]


def test_non_ascii_header_bytes_are_forwarded_and_passed_back_unchanged(formats_gateway, upstream):
    """UTF-8 bytes in a header reach the upstream and the client as sent; non-UTF-8 are left out.

    The fake upstream records and sends headers as Latin-1 (one character per byte).
    """
    gw = formats_gateway()
    _, secret = gw.create_key()
    accented = "é ü 日本".encode()
    upstream.extra_headers = {"x-upstream-note": accented.decode("latin-1")}
    resp = httpx.post(
        gw.base_url + "/v1/chat/completions",
        json={"model": "m", "messages": [{"role": "user", "content": "hi"}]},
        headers=[
            (b"authorization", f"Bearer {secret}".encode()),
            (b"x-request-id", accented),
            (b"x-odd", b"caf\xe9"),  # Latin-1, not UTF-8: cannot be sent unchanged
            (b"x-plain", b"ascii"),
        ],
    )
    assert resp.status_code == 200
    sent = upstream.headers[-1]
    assert sent["x-request-id"].encode("latin-1") == accented
    assert "x-odd" not in sent and sent["x-plain"] == "ascii"
    assert (
        resp.headers.raw[[k.lower() for k, _ in resp.headers.raw].index(b"x-upstream-note")][1]
        == accented
    )


def test_hoisting_provider_gets_the_block_in_a_user_message(formats_gateway, upstream):
    gw = formats_gateway()
    key_id, secret = gw.create_key()
    client = openai_client(gw, secret)
    client.chat.completions.create(
        model="local/llama3", messages=[{"role": "user", "content": "I work at a bakery"}]
    )
    gw.wait_for_memories(lambda ms: any("bakery" in m.content for m in ms), key_id)
    history: list[Any] = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Where do I work?"},
    ]
    client.chat.completions.create(model="local/llama3", messages=history)
    sent = upstream.requests[-1]
    assert sent["model"] == "llama3"
    assert "authorization" not in upstream.headers[-1]  # no key configured for "local"
    assert [m["role"] for m in sent["messages"]] == ["system", "user", "user"]
    assert sent["messages"][0] == history[0]
    assert "bakery" in sent["messages"][1]["content"]
    with pytest.raises(openai.BadRequestError):  # ollama preset: no responses route
        client.responses.create(model="local/llama3", input="hi")
