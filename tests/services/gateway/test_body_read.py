"""Reading request bodies over real sockets: a client that hangs up mid-upload is handled
quietly (a debug log line, no unhandled-error log, no ASGI traceback), and a body that never
completes gets a 408 in the route's error shape once ``body_read_timeout_s`` has passed."""

from __future__ import annotations

import gzip
import json
import logging
import socket
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.waiting import READY_TIMEOUT_S

PATHS = ["/v1/chat/completions", "/v1/responses", "/v1/messages", "/v1/embeddings"]
QUIET = "client disconnected while sending the body of"


@pytest.fixture
def gateway_logs(caplog) -> Iterator[pytest.LogCaptureFixture]:
    """``caplog`` at debug level, also capturing uvicorn's own error logger (not propagated)."""
    caplog.set_level(logging.DEBUG, logger="mnemogate.gateway")
    uvicorn_error = logging.getLogger("uvicorn.error")
    uvicorn_error.addHandler(caplog.handler)
    try:
        yield caplog
    finally:
        uvicorn_error.removeHandler(caplog.handler)


def send_partial(port: int, path: str, secret: str) -> socket.socket:
    """Open a connection and send headers announcing 100 bytes, then only 10 of them."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=30)
    sock.sendall(
        f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        f"Authorization: Bearer {secret}\r\nContent-Length: 100\r\n\r\n".encode()
        + b'{"model": '
    )
    return sock


def read_response(sock: socket.socket) -> tuple[int, dict[str, str], bytes]:
    """Read one whole response until the server closes: status, headers, body."""
    data = b""
    while chunk := sock.recv(65536):
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = dict(line.split(": ", 1) for line in lines[1:])
    return int(lines[0].split(" ")[1]), {k.lower(): v for k, v in headers.items()}, body


def wait_for_record(caplog: pytest.LogCaptureFixture, text: str, timeout_s: float = 20.0) -> None:
    """Poll the captured records until one contains ``text``."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if any(text in r.getMessage() for r in caplog.records):
            return
        time.sleep(0.05)
    raise AssertionError(f"no log record with {text!r}: {[r.getMessage() for r in caplog.records]}")


def test_client_abort_mid_upload_is_quiet_on_every_route(formats_gateway, gateway_logs):
    gw = formats_gateway()
    _, secret = gw.create_key()
    for path in PATHS:
        send_partial(gw.port, path, secret).close()
        wait_for_record(gateway_logs, f"{QUIET} {path}")
    errors = [r for r in gateway_logs.records if r.levelno >= logging.ERROR]
    assert errors == [], [r.getMessage() for r in errors]
    assert not any("Exception in ASGI application" in r.getMessage() for r in gateway_logs.records)


@pytest.mark.parametrize("path", ["/v1/chat/completions", "/v1/messages"])
def test_a_body_that_never_completes_is_a_408_in_the_route_shape(formats_gateway, path):
    gw = formats_gateway(body_read_timeout_s=1.0)
    _, secret = gw.create_key()
    sock = send_partial(gw.port, path, secret)  # kept open: the rest never comes
    try:
        status, headers, body = read_response(sock)
    finally:
        sock.close()
    assert status == 408
    assert headers["connection"] == "close"
    error = json.loads(body)
    if path == "/v1/messages":
        assert error["type"] == "error"
        assert error["error"]["type"] == "invalid_request_error"
        assert "did not arrive" in error["error"]["message"]
    else:
        assert error["error"]["code"] == "request_timeout"
        assert error["error"]["type"] == "invalid_request_error"


def test_body_read_timeout_must_be_positive():
    from shared.errors import ConfigurationError
    from shared.settings import load_settings

    with pytest.raises(ConfigurationError):
        load_settings({}, body_read_timeout_s=0)


BODIES: dict[str, dict[str, Any]] = {
    "/v1/chat/completions": {"model": "m", "messages": [{"role": "user", "content": "hi"}]},
    "/v1/responses": {"model": "m", "input": "hi"},
    "/v1/messages": {
        "model": "claude/c",
        "max_tokens": 8,
        "messages": [{"role": "user", "content": "hi"}],
    },
    "/v1/embeddings": {"model": "m", "input": "hi"},
}


def error_of(resp: httpx.Response, path: str) -> dict[str, str]:
    body = resp.json()
    if path == "/v1/messages":
        assert body["type"] == "error"
    return body["error"]


def post(gw, secret: str, path: str, content: bytes, coding: str | None = None) -> httpx.Response:
    headers = {"authorization": f"Bearer {secret}", "content-type": "application/json"}
    if coding is not None:
        headers["content-encoding"] = coding
    return httpx.post(gw.base_url + path, content=content, headers=headers, timeout=READY_TIMEOUT_S)


@pytest.mark.parametrize("path", PATHS)
def test_a_compressed_body_is_a_415_and_never_forwarded(formats_gateway, upstream, path):
    # the coding's name must not travel upstream with a body the gateway re-encoded
    gw = formats_gateway()
    _, secret = gw.create_key()
    before = len(upstream.requests)
    raw = json.dumps(BODIES[path]).encode()
    for coding, data in (("gzip", gzip.compress(raw)), ("gzip", raw), ("br", raw)):
        resp = post(gw, secret, path, data, coding)
        assert resp.status_code == 415, resp.text
        assert "content-encoding" in error_of(resp, path)["message"]
    assert len(upstream.requests) == before
    ok = post(gw, secret, path, raw, "identity")
    assert ok.status_code == 200, ok.text


@pytest.mark.parametrize("path", PATHS)
def test_invalid_utf8_anywhere_in_the_body_is_a_400(formats_gateway, upstream, path):
    # also in a field the gateway passes through without reading it
    gw = formats_gateway()
    _, secret = gw.create_key()
    before = len(upstream.requests)
    raw = json.dumps({**BODIES[path], "x_extra": "@"}).encode().replace(b"@", b"\xff\xfe")
    resp = post(gw, secret, path, raw)
    assert resp.status_code == 400, resp.text
    assert "UTF-8" in error_of(resp, path)["message"]
    assert len(upstream.requests) == before
    fine = json.dumps({**BODIES[path], "x_extra": "naïve ☕"}, ensure_ascii=False).encode()
    resp = post(gw, secret, path, fine)
    assert resp.status_code == 200, resp.text


@pytest.mark.parametrize("path", PATHS)
def test_a_leading_byte_order_mark_is_dropped_not_refused(formats_gateway, upstream, path):
    # RFC 8259 §8.1: a parser may ignore it (the provider, answering 200, parsed what it got)
    gw = formats_gateway()
    _, secret = gw.create_key()
    resp = post(gw, secret, path, b"\xef\xbb\xbf" + json.dumps(BODIES[path]).encode())
    assert resp.status_code == 200, resp.text
    # one inside the body is no byte order mark: the JSON parser decides (here: not JSON)
    inner = b" \xef\xbb\xbf" + json.dumps(BODIES[path]).encode()
    assert post(gw, secret, path, inner).status_code == 400
