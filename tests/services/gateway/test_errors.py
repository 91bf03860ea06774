"""Bad input and upstream failures: documented error shape and status, nothing stored."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.fakes.sockets import read_until
from tests.fakes.upstream import free_port
from tests.waiting import READY_TIMEOUT_S

CHAT = "/v1/chat/completions"


def assert_error_shape(resp: httpx.Response, status: int) -> dict:
    assert resp.status_code == status, resp.text
    body = resp.json()
    assert set(body) == {"error"}
    err = body["error"]
    assert set(err) == {"message", "type", "code"}
    assert isinstance(err["message"], str) and err["message"]
    assert isinstance(err["type"], str)
    return err


@pytest.fixture
def key(gateway):
    return gateway.create_key()


def post(gateway, secret, content=None, json=None, headers=None, timeout=READY_TIMEOUT_S):
    h = {"authorization": f"Bearer {secret}"}
    h.update(headers or {})
    if json is not None:
        return httpx.post(gateway.base_url + CHAT, json=json, headers=h, timeout=timeout)
    h["content-type"] = "application/json"
    return httpx.post(gateway.base_url + CHAT, content=content, headers=h, timeout=timeout)


@pytest.mark.parametrize(
    ("body", "code"),
    [
        (b"{not json", "invalid_json"),
        (b"", "invalid_json"),
        (b"[1, 2]", "invalid_request"),
        (b'{"model": "m"}', "invalid_request"),
        (b'{"model": "m", "messages": []}', "invalid_request"),
        (b'{"model": "m", "messages": "hello"}', "invalid_request"),
        (b'{"model": "m", "messages": [1]}', "invalid_request"),
        (b'{"model": "m", "messages": [{"role": "wizard", "content": "x"}]}', "invalid_request"),
        (b'{"model": "m", "messages": [{"role": "user", "content": 5}]}', "invalid_request"),
        (b'{"model": 7, "messages": [{"role": "user", "content": "x"}]}', "invalid_request"),
        (
            b'{"model": "m", "stream": "yes", "messages": [{"role": "user", "content": "x"}]}',
            "invalid_request",
        ),
        (
            b'{"model": "m", "user": 5, "messages": [{"role": "user", "content": "x"}]}',
            "invalid_request",
        ),
        (b'{"model": "m", "x": ' + b"[" * 100_000 + b"]" * 100_000 + b"}", "invalid_json"),
    ],
)
def test_malformed_requests_get_400(gateway, upstream, key, body, code):
    _, secret = key
    err = assert_error_shape(post(gateway, secret, content=body), 400)
    assert err["type"] == "invalid_request_error"
    assert err["code"] == code
    assert upstream.requests == []


def test_missing_and_unknown_keys_get_401(gateway, upstream):
    ok = {"model": "m", "messages": [{"role": "user", "content": "My name is Bob"}]}
    assert_error_shape(httpx.post(gateway.base_url + CHAT, json=ok), 401)
    assert_error_shape(post(gateway, "mg-not-a-real-key", json=ok), 401)
    resp = httpx.get(gateway.base_url + "/v1/models", headers={"authorization": "Bearer nope"})
    assert_error_shape(resp, 401)
    assert upstream.requests == []


def test_revoked_key_gets_401(gateway, upstream, key):
    key_id, secret = key

    async def revoke(store):
        return await store.keys.revoke(key_id)

    assert gateway.with_store(revoke)
    ok = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    assert_error_shape(post(gateway, secret, json=ok), 401)


def test_body_over_limit_gets_413(gateway_factory, upstream):
    gw = gateway_factory(max_body_bytes=2048)
    _, secret = gw.create_key()
    big = {"model": "m", "messages": [{"role": "user", "content": "My name is Zed " * 500}]}
    err = assert_error_shape(post(gw, secret, json=big), 413)
    assert err["code"] == "payload_too_large"

    # chunked upload without Content-Length is cut off too
    def chunks():
        yield b'{"model": "m", "messages": [{"role": "user", "content": "'
        for _ in range(100):
            yield b"x" * 100
        yield b'"}]}'

    resp = httpx.post(
        gw.base_url + CHAT,
        content=chunks(),
        headers={"authorization": f"Bearer {secret}", "content-type": "application/json"},
    )
    assert_error_shape(resp, 413)
    assert upstream.requests == []
    time.sleep(0.3)
    assert gw.memories() == []


def test_unreachable_upstream_gets_502_and_nothing_is_learned(gateway_factory, upstream):
    gw = gateway_factory(upstream_base_url=f"http://127.0.0.1:{free_port()}/v1")
    _, secret = gw.create_key()
    body = {"model": "m", "messages": [{"role": "user", "content": "My name is Carol"}]}
    err = assert_error_shape(post(gw, secret, json=body), 502)
    assert err["code"] == "upstream_unavailable"
    stream = {**body, "stream": True}
    assert_error_shape(post(gw, secret, json=stream), 502)
    time.sleep(0.3)
    assert gw.memories() == []


@contextlib.contextmanager
def _upstream_cutting_its_body() -> Iterator[str]:
    """A real HTTP server on 127.0.0.1 that answers 200, promises 1,000 bytes, sends 7, closes.

    Yields its base URL (``.../v1``); stopped (its socket closed, its thread joined) after.
    """
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(0.2)
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except TimeoutError:
                continue
            with conn:
                conn.settimeout(READY_TIMEOUT_S)
                read_until(conn, b"\r\n\r\n")
                head = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
                conn.sendall(head + b"content-length: 1000\r\n\r\n" + b'{"id": ')

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.getsockname()[1]}/v1"
    finally:
        stop.set()
        thread.join(READY_TIMEOUT_S)
        server.close()


def test_an_upstream_body_cut_short_gets_502_saying_so(gateway_factory):
    with _upstream_cutting_its_body() as base_url:
        gw = gateway_factory(upstream_base_url=base_url)
        _, secret = gw.create_key()
        body = {"model": "m", "messages": [{"role": "user", "content": "My name is Erin"}]}
        err = assert_error_shape(post(gw, secret, json=body), 502)
    assert err["code"] == "upstream_unavailable"
    assert "incomplete or malformed response body" in err["message"]
    assert "unreachable" not in err["message"]


def test_slow_upstream_gets_504(gateway_factory, upstream):
    gw = gateway_factory(upstream_timeout_s=0.3)
    _, secret = gw.create_key()
    upstream.delay_s = 2.0
    body = {"model": "m", "messages": [{"role": "user", "content": "My name is Dave"}]}
    err = assert_error_shape(post(gw, secret, json=body), 504)
    assert err["code"] == "upstream_timeout"
    time.sleep(0.3)
    assert gw.memories() == []


@pytest.mark.parametrize("stream", [False, True])
def test_upstream_error_status_and_body_are_preserved(gateway, upstream, key, stream):
    _, secret = key
    upstream.fail_status = 500
    body = {
        "model": "m",
        "stream": stream,
        "messages": [{"role": "user", "content": "My name is Erin"}],
    }
    resp = post(gateway, secret, json=body)
    assert resp.status_code == 500
    assert resp.json()["error"]["code"] == "boom"
    upstream.fail_status = None
    # a later successful request is learned, the failed one never is
    ok = {"model": "m", "messages": [{"role": "user", "content": "I prefer TypeScript"}]}
    assert post(gateway, secret, json=ok).status_code == 200
    items = gateway.wait_for_memories(lambda ms: any("TypeScript" in m.content for m in ms))
    assert not any("Erin" in m.content for m in items)


def test_unknown_fields_pass_through_untouched(gateway, upstream, key):
    _, secret = key
    body: dict[str, Any] = {
        "model": "m",
        "messages": [{"role": "user", "content": "hello", "x_custom": {"a": [1, 2]}}],
        "temperature": 0.25,
        "logit_bias": {"50256": -100},
        "vendor_extension": {"nested": True, "list": [1, "two", None]},
    }
    assert post(gateway, secret, json=body).status_code == 200
    got: dict[str, Any] = upstream.requests[-1]
    assert got["temperature"] == 0.25
    assert got["logit_bias"] == {"50256": -100}
    assert got["vendor_extension"] == body["vendor_extension"]
    assert got["messages"][-1] == body["messages"][0]
    assert upstream.headers[-1]["authorization"] == "Bearer sk-upstream-test"


def test_unknown_route_and_method_use_error_shape(gateway):
    assert_error_shape(httpx.get(gateway.base_url + "/nope"), 404)
    assert_error_shape(httpx.get(gateway.base_url + CHAT), 405)


def test_health_endpoints(gateway):
    assert httpx.get(gateway.base_url + "/healthz").json() == {"status": "ok"}
    ready = httpx.get(gateway.base_url + "/readyz")
    assert ready.status_code == 200
    assert ready.json()["checks"]["db"] == "ok"
    assert ready.json()["checks"]["redis"] == "embedded"


def test_models_passthrough(gateway, key):
    _, secret = key
    resp = httpx.get(gateway.base_url + "/v1/models", headers={"authorization": f"Bearer {secret}"})
    assert resp.status_code == 200
    assert resp.json()["data"][0]["id"] == "fake-model"
